#!/usr/bin/env bash
# The whole GPU test suite (pytest -m gpu tests) in parallel shards on one GPU, each under a time limit.
# Usage on the GPU machine, from the repository root (after pip install --no-deps -e .):
#   SHARDS=6 SUITE_S=540 SUITE_K='...' bash benchmarks/gpu_suite.sh [test paths...]
# - the GPU tests' ids are dealt round-robin to SHARDS pytest processes (kernels compile on the CPU cores in
#   parallel; the processes share the disk cache, whose writes are atomic, and time-slice the GPU);
# - tests that time kernels or hold every SM (tests/bench, test_cooperative.py) run first, alone (ALONE_S
#   seconds at most);
# - the whole stops at SUITE_S seconds: the log then shows how far it got ("timeout" below);
# - SUITE_K: a further -k filter; SUITE_IDS: a file of test ids to run instead (one per line); SUITE_PART=p/n: the
#   p-th of n parts (every n-th id from the p-th, 0-based), for a suite longer than one device command may run
#   (forty-first session: 515 tests took 556 of its 600 s). Logs: $OUT/suite_logs.txt (every shard's); the summary:
#   $OUT/suite.md.
set -uo pipefail
OUT="${OUT:-results}"
mkdir -p "$OUT"
SHARDS="${SHARDS:-6}"
LIMIT="${SUITE_S:-540}"
PATHS=("${@:-tests}")
ids="$(mktemp -d)/ids.txt"                                               # (kept out of $OUT: fewer files to fetch)
if [ -n "${SUITE_IDS:-}" ]; then
  cp "$SUITE_IDS" "$ids"
else
  python3 -m pytest --collect-only -q -m gpu -p no:cacheprovider ${SUITE_K:+-k "$SUITE_K"} "${PATHS[@]}" 2>/dev/null \
    | grep "::" > "$ids"
fi
if [ -n "${SUITE_PART:-}" ]; then                                         # p/n: every n-th id from the p-th (0-based)
  awk -v n="${SUITE_PART#*/}" -v p="${SUITE_PART%/*}" '(NR - 1) % n == p' "$ids" > "$ids.part"
  mv "$ids.part" "$ids"
fi
alone="tests/bench/|tests/sm90/test_cooperative.py"
grep -vE "^($alone)" "$ids" > "$ids.shared" || true
grep -E "^($alone)" "$ids" > "$ids.alone" || true
echo "$(wc -l < "$ids") GPU tests: $(wc -l < "$ids.shared") in $SHARDS shards, $(wc -l < "$ids.alone") alone"
start=$(date +%s)
if [ -s "$ids.alone" ]; then
  mapfile -t shard < "$ids.alone"
  timeout "${ALONE_S:-150}" python3 -m pytest -v -m gpu -p no:cacheprovider -rfE "${shard[@]}" > "$OUT/suite_alone.log" 2>&1
  echo "exit $?" >> "$OUT/suite_alone.log"
fi
LIMIT=$((LIMIT - ($(date +%s) - start)))
for ((i = 0; i < SHARDS; i++)); do
  awk -v n="$SHARDS" -v i="$i" 'NR % n == i' "$ids.shared" > "$ids.$i"
  if [ -s "$ids.$i" ]; then
    ( mapfile -t shard < "$ids.$i"
      timeout "$LIMIT" python3 -m pytest -v -m gpu -p no:cacheprovider -rfE --durations=8 "${shard[@]}" > "$OUT/suite_$i.log" 2>&1
      echo "exit $?" >> "$OUT/suite_$i.log" ) &
  fi
done
wait
{
  echo "| shard | tests | passed | failed | errors | skipped | exit |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  for log in "$OUT"/suite_*.log; do
    name=$(basename "$log" .log)
    [ -s "$ids.${name#suite_}" ] || continue                              # (an earlier run's log)
    n=$(wc -l < "$ids.${name#suite_}")
    count() { grep -cE "::.* $1( |$)" "$log"; }
    echo "| $name | $n | $(count PASSED) | $(count FAILED) | $(count ERROR) | $(count SKIPPED) | $(tail -1 "$log" | sed 's/exit //') |"
  done
  echo
  echo "wall: $(($(date +%s) - start)) s (exit 124: the shard's time limit stopped it)"
  grep -hE "::.* (FAILED|ERROR)( |$)" "$OUT"/suite_*.log | sed 's/ *\[ *[0-9]*%\]//' | sort | uniq | head -40
} | tee "$OUT/suite.md"
for log in "$OUT"/suite_*.log; do                                         # one file of logs (fewer to fetch)
  echo "===== $(basename "$log")"; cat "$log"
done > "$OUT/suite_logs.txt" && rm -f "$OUT"/suite_*.log
