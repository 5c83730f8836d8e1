"""Layer 6: GEMMs written in the kernel language. ``sgemm`` is the CuTe tutorial's SIMT kernel
(``gemm_device``), ported line for line."""
from tilecraft.gemm.simt import SimtTiling, gemm_device, gemm_device_args, sgemm

__all__ = ["SimtTiling", "gemm_device", "gemm_device_args", "sgemm"]
