# Sourced by the device_*.sh scripts: logs under $OUT (./results when unset), unbuffered Python on this
# checkout, a kernel cache of this run's own, and the GPU's name and clocks in $OUT/gpu.txt.
set -uo pipefail
OUT="${OUT:-results}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD"
export TILECRAFT_CACHE_DIR="$OUT/../tc-cache-$$"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv | tee "$OUT/gpu.txt"

# gpu_tests NAME SECONDS PYTEST_ARGS...: `pytest -q -m gpu PYTEST_ARGS` under a SECONDS timeout, its output in
# $OUT/NAME.log; prints the failures and pytest's summary line.
gpu_tests() {
  local name=$1 seconds=$2
  shift 2
  timeout "$seconds" python3 -m pytest -q -m gpu "$@" > "$OUT/$name.log" 2>&1
  grep -E "^(FAILED|E  )" "$OUT/$name.log" | head -20; tail -1 "$OUT/$name.log"
}

# timelines SHAPES CONFIGS: per-CTA timelines of the Hopper GEMM (probe_sm90_timeline.py) at each of the
# space-separated SHAPES for the ';'-separated CONFIGS (TL_SHAPES / TL_CONFIGS override them, TL_S limits
# each shape's seconds, TL_ARGS adds arguments such as --ctas), appended to $OUT/timeline.md.
timelines() {
  local shape
  for shape in ${TL_SHAPES:-$1}; do
    timeout "${TL_S:-120}" python3 benchmarks/probe_sm90_timeline.py --shape "$shape" --configs "${TL_CONFIGS:-$2}" \
      ${TL_ARGS:-} 2>&1 | tee -a "$OUT/timeline.md"
  done
}

# llm_probe NAME SHAPES CONFIGS [ARGS...]: probe_llm.py (GPU time, 20 reps, ROUNDS rounds in turn, 3 unless set)
# at SHAPES for the ';'-separated CONFIGS against the pick and cuBLAS (SHAPES / CONFIGS in the environment override
# them, LLM_S limits the seconds), ARGS passed on; appended to $OUT/NAME.md.
llm_probe() {
  local name=$1 shapes=$2 configs=$3
  shift 3
  timeout "${LLM_S:-300}" python3 benchmarks/probe_llm.py --gpu-only --reps 20 --rounds "${ROUNDS:-3}" \
    --shapes "${SHAPES:-$shapes}" --configs "${CONFIGS:-$configs}" "$@" 2>&1 | tee -a "$OUT/$name.md"
}

# mixed_large NAME [ARGS...]: bench_mixed_large.py (the mixed-input GEMM at large M; ROUNDS rounds in turn, 3 unless
# set; MIXED_S limits the seconds, 300 unless set) with ARGS, appended to $OUT/NAME.md and shown without the tables'
# rule lines.
mixed_large() {
  local name=$1
  shift
  timeout "${MIXED_S:-300}" python3 benchmarks/bench_mixed_large.py --rounds "${ROUNDS:-3}" "$@" 2>&1 \
    | tee -a "$OUT/$name.md" | grep -v "^|---"
}

# fp8_probe NAME SHAPES CONFIGS [ARGS...]: the same with probe_fp8.py (e4m3 against torch._scaled_mm; FP8_S
# limits the seconds).
fp8_probe() {
  local name=$1 shapes=$2 configs=$3
  shift 3
  timeout "${FP8_S:-300}" python3 benchmarks/probe_fp8.py --rounds "${ROUNDS:-3}" \
    --shapes "${SHAPES:-$shapes}" --configs "${CONFIGS:-$configs}" "$@" 2>&1 | tee -a "$OUT/$name.md"
}

# fp8_pick_probe NAME PATCH SHAPES: at each space-separated shape, probe_fp8.py (ROUNDS rounds) with tc.gemm's pick
# against the promoted pick tilecraft.gemm.op makes after the Python statement PATCH (an earlier estimate, say),
# appended to $OUT/NAME.md.
fp8_pick_probe() {
  local name=$1 patch=$2 shape cfg
  for shape in $3; do
    cfg=$(python3 -c "
import tilecraft.gemm.op as op
$patch
M, N, K = map(int, '$shape'.split('x'))
print(repr(op.pick_fp8_config(M, N, K, 1, 132)).replace('Sm90Config(', 'S('))")
    timeout 120 python3 benchmarks/probe_fp8.py --rounds "${ROUNDS:-3}" --shapes "$shape" --configs "$cfg" 2>&1 \
      | grep -v "^| .* | _scaled_mm fast\|tc.gemm fast" | tee -a "$OUT/$name.md"
  done
}

# both PROBE NAME SECONDS SHAPES CONFIGS_N CONFIGS_K [ARGS...]: benchmarks/PROBE.py with B N- then K-contiguous (its
# --configs CONFIGS_N / CONFIGS_K), ROUNDS rounds, ARGS passed on, appended to $OUT/NAME.md; prints the table.
both() {
  local probe=$1 name=$2 seconds=$3 shapes=$4 configs_n=$5 configs_k=$6 major
  shift 6
  for major in N K; do
    timeout "$seconds" python3 "benchmarks/$probe.py" --rounds "${ROUNDS:-3}" --b-major $major --shapes "$shapes" \
      --configs "$([ $major = N ] && echo "$configs_n" || echo "$configs_k")" "$@" >> "$OUT/$name.md" 2>&1
  done
  sed 's/  */ /g' "$OUT/$name.md" | grep -v "^|---"
}

# patched PATCH CMD...: CMD with benchmarks/patches/PATCH.diff applied to this checkout for its duration (git apply,
# then git apply -R); nothing runs if the patch does not apply.
patched() {
  local patch="benchmarks/patches/$1.diff"
  shift
  git apply "$patch" || return 1
  "$@"
  git apply -R "$patch"
}

# cases PREFIX,...: benchmarks/probe_small_m.py's cases whose names start with one of the comma-separated prefixes,
# comma-separated.
cases() {
  python3 -c "import sys; sys.argv = ['x']; sys.path.insert(0, 'benchmarks'); import probe_small_m as P
print(','.join(k for k in P.CASES if k.startswith(tuple('$1'.split(',')))))"
}

# small_tests: every GPU test of the small-M mixed kernel (tests/quant/test_mixed.py; SUITE_K filters them) in 8
# shards of TST_S seconds (300 unless set); prints the shards' summary.
small_tests() {
  SHARDS=8 SUITE_S="${TST_S:-300}" bash benchmarks/gpu_suite.sh tests/quant/test_mixed.py
  tail -12 "$OUT/suite.md"
}

# decode NAME MS: the small-M kernel (W4A16 g128 and W8A16 per channel, bf16) at N = K = 8192 as a stream of calls
# (bench_decode.py --quick), cuBLAS bf16 beside it, at M = DEC_MS or else MS (comma-separated), DEC_S seconds at most
# (150 unless set); appended to $OUT/NAME.md.
decode() {
  timeout "${DEC_S:-150}" python3 benchmarks/bench_decode.py --quick --ms "${DEC_MS:-$2}" 2>&1 | tee -a "$OUT/$1.md"
}
