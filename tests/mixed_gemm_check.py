"""The check shared by the mixed-input GEMM tests (small-M and Hopper kernels): y against float64."""
from __future__ import annotations

from typing import Any


def check_mixed_gemm(y: Any, x: Any, pw: Any, b: Any, tol: dict, weight_dtype: Any) -> None:
    """Assert y == x @ dequantize(pw) (+ b): same dtype and shape as the float64 reference, relative
    Frobenius error within tol[x.dtype]. The reference weight is pw dequantized to weight_dtype (float64,
    or the 16-bit type a kernel multiplies exactly), then taken to float64."""
    ref = x.double() @ pw.dequantize(weight_dtype).double()
    if b is not None:
        ref = ref + b.double()
    assert y.dtype == x.dtype and y.shape == ref.shape
    err = float((y.double() - ref).norm() / ref.norm())
    assert err <= tol[x.dtype], err
