#!/usr/bin/env python
"""Nsight Compute's text output as one row per metric and one column per profiled kernel, in profiling order
(the ``cfgN:`` names that benchmarks/ncu_gemm.py prints head the table): time, cycles, clock, tensor pipes,
DRAM bytes, and L2's request coalescer (LRC): the sectors requested, those coalesced by hardware (simultaneous
reads of one sector from several SMs) and programmatically (TMA multicast), and what reached L2's slices.

    python3 benchmarks/ncu_columns.py ncu_4096x4096x4096.txt [more.txt ...]
"""
from __future__ import annotations

import sys

METRICS = {
    "time": "gpu__time_duration.sum",
    "cycles": "sm__cycles_elapsed.max",
    "GHz": "sm__cycles_elapsed.avg.per_second",
    "tensor%": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "dram": "dram__bytes_read.sum",
    "l2 bytes": "lts__t_bytes.sum",
    "requested": "lrc__request_sectors_op_read_coalescable.sum",
    "hw coal.": "lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum",
    "multicast": "lrc__request_sectors_op_read_coalescing_achieved_type_programmatic.sum",
    "to L2": "lrc__lrc2xbar_sectors_op_read.sum",
}
#: every metric the table can show, for ncu's --metrics
NCU_METRICS = ",".join(METRICS.values())


def columns(lines: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """(the cfgN names in order, {short name: the metric's values in profiling order})."""
    names = [line.strip() for line in lines if line.startswith("cfg") and ":" in line]
    by_metric = {full: short for short, full in METRICS.items()}
    values: dict[str, list[str]] = {short: [] for short in METRICS}
    for line in lines:
        parts = line.split()
        if parts and parts[0] in by_metric:
            values[by_metric[parts[0]]].append(parts[-1])
    return names, {k: v for k, v in values.items() if v}


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    for path in paths:
        with open(path) as f:
            names, values = columns(f.read().splitlines())
        print(path, *names, sep="\n")
        for short, vals in values.items():
            print(f"{short:10s}", " ".join(f"{v:>12s}" for v in vals))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
