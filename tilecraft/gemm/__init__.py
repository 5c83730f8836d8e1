"""Layer 6: GEMMs written in the kernel language. ``sgemm`` is the CuTe tutorial's SIMT kernel
(``gemm_device``), ported line for line; ``sgemm_tuned`` is the tuned SIMT SGEMM (simt_tuned.py).

Importing this package registers ``sgemm_tuned`` as the benchmark's ``tilecraft`` contender for fp32
(IEEE, no TF32), and ``sgemm_contender(config)`` makes a factory for any other tiling.
"""
from __future__ import annotations

from typing import Any, Callable

from tilecraft.gemm.simt import SimtTiling, check_sgemm_operands, gemm_device, gemm_device_args, sgemm
from tilecraft.gemm.simt_tuned import CONFIGS, DEFAULT, SgemmConfig, sgemm_tuned, sgemm_tuned_args, sgemm_tuned_kernel

__all__ = ["SimtTiling", "check_sgemm_operands", "gemm_device", "gemm_device_args", "sgemm",
           "CONFIGS", "DEFAULT", "SgemmConfig", "sgemm_tuned", "sgemm_tuned_args", "sgemm_tuned_kernel",
           "sgemm_contender"]


def sgemm_contender(config: SgemmConfig = DEFAULT) -> Callable[[Any], Any]:
    """A bench contender factory (see tilecraft.bench.contenders) running sgemm_tuned with `config`:
    fp32 problems on CUDA only; anything else is reported missing with the reason."""
    from tilecraft.bench.contenders import Kernel, Missing

    def factory(problem: Any) -> Any:
        if problem.dtype != "fp32":
            return Missing(f"tilecraft SIMT SGEMM is fp32 only, not {problem.dtype}")
        if not problem.device.startswith("cuda"):
            return Missing("tilecraft SIMT SGEMM runs on CUDA only")

        def fn(a: Any, b: Any) -> Any:
            return sgemm_tuned(a, b, config=config)

        return Kernel(fn=fn, prepare=lambda x: (x.a, x.b), label=f"tilecraft SIMT SGEMM {config.name}")

    return factory


def _register() -> None:
    from tilecraft.bench.contenders import register_contender

    register_contender("tilecraft", sgemm_contender(DEFAULT), "tilecraft's tuned SIMT SGEMM (fp32)", replace=True)


_register()
