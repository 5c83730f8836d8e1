"""Kernels that are not GEMMs, written in the kernel language: ``transpose`` (seed 001's transpose
through ``copy`` between a row-major and a column-major view)."""
from tilecraft.kernels.transpose import TransposeConfig, transpose, transpose_kernel

__all__ = ["TransposeConfig", "transpose", "transpose_kernel"]
