"""Layer 6: GEMMs written in the kernel language, and the GEMM API.

* ``tc.gemm(A, B, C=None, *, alpha, beta, bias, activation, out_dtype)``: one call on torch tensors that
  picks a configuration (op.py). This package is callable: ``tc.gemm(...)`` is ``tilecraft.gemm.gemm(...)``
  while ``import tilecraft.gemm`` / ``tc.gemm.GemmOp`` still reach the package (a module cannot be both
  a function and a package any other way without one shadowing the other after the first import).
* ``GemmOp``: a configured operation with ``can_implement`` (op.py); ``TensorOpConfig``: its tiling.
* Kernels: ``tensorop_gemm_kernel`` (the sm80+ multistage tensor-op GEMM, tensorop.py), ``sgemm`` (the
  CuTe tutorial's SIMT ``gemm_device``, simt.py), ``sgemm_tuned`` (the tuned SIMT SGEMM, simt_tuned.py),
  ``sgemv`` (the GEMV for at most 16 rows of A, fp32 or 16-bit, gemv.py), ``skinny_gemm`` (16-bit GEMMs of few
  rows, the weight read in place by the mixed-input kernel, skinny.py).

Importing this package registers the benchmark's ``tilecraft`` contender: the tensor-op GEMM for fp16,
bf16 and tf32, the tuned SIMT SGEMM for IEEE fp32; ``sgemm_contender(config)`` and
``tensorop_contender(config)`` make factories for other tilings.
"""
from __future__ import annotations

import sys
import types
from typing import Any, Callable

from tilecraft.gemm.op import (GEMV_16_ROWS, HEURISTIC_TABLE, SM90_TABLE, GemmOp, Plan, clear_plans, gemm,
                               pick_config, pick_sm90_config)
from tilecraft.gemm.sm90 import Sm90Config
from tilecraft.gemm.simt import SimtTiling, check_sgemm_operands, gemm_device, gemm_device_args, sgemm
from tilecraft.gemm.simt_tuned import (
    CONFIGS, DEFAULT, FALLBACK, SMALL, THIN, SgemmConfig, pick_sgemm_config, sgemm_tuned, sgemm_tuned_args,
    sgemm_tuned_kernel,
)
from tilecraft.gemm.gemv import MAX_ROWS, SgemvConfig, sgemv, sgemv_kernel
from tilecraft.gemm.skinny import skinny_gemm
from tilecraft.gemm.tensorop import EpilogueSpec, TensorOpConfig, splitk_reduce_kernel, tensorop_gemm_kernel

__all__ = ["gemm", "GemmOp", "Plan", "HEURISTIC_TABLE", "pick_config", "TensorOpConfig", "EpilogueSpec",
           "SM90_TABLE", "Sm90Config", "pick_sm90_config", "clear_plans",
           "tensorop_gemm_kernel", "splitk_reduce_kernel",
           "SimtTiling", "check_sgemm_operands", "gemm_device", "gemm_device_args", "sgemm",
           "CONFIGS", "DEFAULT", "FALLBACK", "SMALL", "THIN", "SgemmConfig", "pick_sgemm_config", "sgemm_tuned",
           "sgemm_tuned_args", "sgemm_tuned_kernel", "SgemvConfig", "sgemv", "sgemv_kernel", "skinny_gemm",
           "sgemm_contender", "tensorop_contender"]

_TC_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "tf32": "tf32"}


def sgemm_contender(config: SgemmConfig | None = None) -> Callable[[Any], Any]:
    """A bench contender factory (see tilecraft.bench.contenders) running sgemm_tuned with `config` (None: what
    tc.gemm runs in IEEE fp32, the GEMV for at most gemv.MAX_ROWS rows of A, else the tiling sgemm_tuned picks):
    fp32 problems on CUDA only; anything else is reported missing with the reason."""
    from tilecraft.bench.contenders import Kernel, Missing

    def factory(problem: Any) -> Any:
        if problem.dtype != "fp32":
            return Missing(f"tilecraft SIMT SGEMM is fp32 only, not {problem.dtype}")
        if not problem.device.startswith("cuda"):
            return Missing("tilecraft SIMT SGEMM runs on CUDA only")

        def fn(a: Any, b: Any) -> Any:
            return sgemm_tuned(a, b, config=config) if config else gemm(a, b, allow_tf32=False)

        label = (f"tilecraft SIMT SGEMM {config.name}" if config
                 else f"tilecraft fp32 picked (GEMV to {MAX_ROWS} rows, SIMT SGEMM)")
        return Kernel(fn=fn, prepare=lambda x: (x.a, x.b), label=label)

    return factory


def tensorop_contender(config: TensorOpConfig | None = None) -> Callable[[Any], Any]:
    """A bench contender factory running the tensor-op GEMM for fp16/bf16/tf32 problems with `config`
    (None: what tc.gemm picks per shape, the GEMV for 16-bit problems of at most op.GEMV_16_ROWS rows)."""
    from tilecraft.bench.contenders import Kernel, Missing

    def factory(problem: Any) -> Any:
        if problem.dtype not in _TC_DTYPES:
            return Missing(f"tilecraft tensor-op GEMM has no {problem.dtype} kernel")
        if not problem.device.startswith("cuda"):
            return Missing("tilecraft tensor-op GEMM runs on CUDA only")
        tf32 = problem.dtype == "tf32"

        def fn(a: Any, b: Any) -> Any:
            return gemm(a, b, config=config, allow_tf32=tf32 or None)

        label = (f"tilecraft tensor-op {config.name}" if config
                 else f"tilecraft picked (16-bit GEMV to {GEMV_16_ROWS} rows, tensor-op)")
        return Kernel(fn=fn, prepare=lambda x: (x.a, x.b), label=label)

    return factory


def _register() -> None:
    from tilecraft.bench.contenders import Missing, register_contender

    sgemm, tensorop = sgemm_contender(), tensorop_contender(None)

    def factory(problem: Any) -> Any:
        if problem.dtype == "fp32":
            return sgemm(problem)
        if problem.dtype in _TC_DTYPES:
            return tensorop(problem)
        return Missing(f"tilecraft has no {problem.dtype} GEMM yet")

    register_contender("tilecraft", factory, "tilecraft's GEMM (tensor-op fp16/bf16/tf32, tuned SIMT fp32)",
                       replace=True)


class _CallableModule(types.ModuleType):
    """This package, callable as tc.gemm(A, B, ...)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return gemm(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
_register()
