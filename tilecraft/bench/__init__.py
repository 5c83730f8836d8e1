"""tilecraft.bench: benchmarks that tell the truth.

Every performance claim of tilecraft is a ratio against what a user would otherwise call (cuBLAS through
torch, a Triton GEMM, torch's fp8 and int4 kernels), measured in the same process on the same random
inputs, after a correctness check against float64, with CUDA events, rotated inputs that do not sit in
L2, and a roofline floor from ceilings measured on the spot.

Importing this package imports neither torch nor matplotlib nor triton; they load when used.

Main entry points::

    from tilecraft.bench import bench, Timer               # time any callable
    from tilecraft.bench import run_gemm_sweep, get_shapes  # the GEMM sweep
    from tilecraft.bench import register_contender, Kernel, Missing
"""
from __future__ import annotations

import importlib
from typing import Any

from tilecraft.bench.contenders import (
    Kernel,
    Missing,
    list_contenders,
    register_contender,
    resolve,
    unregister_contender,
)
from tilecraft.bench.problem import DTYPES, GemmInputs, GemmProblem
from tilecraft.bench.roofline import Ceilings, Floor, floor_time, gemm_bytes, gemm_flops
from tilecraft.bench.rotation import copies_for_rotation, l2_cache_bytes
from tilecraft.bench.shapes import SHAPE_SETS, GemmShape, get_shapes, parse_shapes
from tilecraft.bench.stats import Stats, percentile, summarize
from tilecraft.bench.timing import Timer, TimingResult, bench

# Names whose modules are heavier or circular to import eagerly.
_LAZY = {
    "run_gemm_sweep": "tilecraft.bench.gemm",
    "GemmRecord": "tilecraft.bench.gemm",
    "GemmSweep": "tilecraft.bench.gemm",
    "demo_gemm": "tilecraft.bench.gemm",
    "measure_ceilings": "tilecraft.bench.roofline",
    "format_table": "tilecraft.bench.report",
    "format_wide_table": "tilecraft.bench.report",
    "plot_ratios": "tilecraft.bench.report",
    "write_outputs": "tilecraft.bench.report",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tilecraft.bench' has no attribute {name!r}")


__all__ = [
    "Kernel", "Missing", "list_contenders", "register_contender", "resolve", "unregister_contender",
    "DTYPES", "GemmInputs", "GemmProblem",
    "Ceilings", "Floor", "floor_time", "gemm_bytes", "gemm_flops",
    "copies_for_rotation", "l2_cache_bytes",
    "SHAPE_SETS", "GemmShape", "get_shapes", "parse_shapes",
    "Stats", "percentile", "summarize",
    "Timer", "TimingResult", "bench",
    *_LAZY,
]
