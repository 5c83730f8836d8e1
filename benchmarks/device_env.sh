# Sourced by the device_*.sh scripts: logs under $OUT (./results when unset), unbuffered Python on this
# checkout, a kernel cache of this run's own, and the GPU's name and clocks in $OUT/gpu.txt.
set -uo pipefail
OUT="${OUT:-results}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD"
export TILECRAFT_CACHE_DIR="$OUT/../tc-cache-$$"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv | tee "$OUT/gpu.txt"
