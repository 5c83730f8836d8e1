"""The float32 GEMM check shared by the SIMT kernels' tests: every element within the rounding bound."""
from __future__ import annotations


def check_fp32_gemm(A, B, C0, C, alpha, beta) -> None:
    """Assert C == alpha * A @ B + beta * C0 within the float32 error bound of a K-term dot product:
    (K + 2) u sum |a||b| (plus the beta term), elementwise, against a float64 reference."""
    ref = alpha * (A.double() @ B.double()) + (beta * C0.double() if beta else 0)
    K = A.shape[1]
    bound = (K + 2) * 2.0**-24 * (abs(alpha) * (A.double().abs() @ B.double().abs()) + abs(beta) * C0.double().abs())
    err = (C.double() - ref).abs()
    assert C.isfinite().all()
    assert (err <= bound + 1e-30).all(), f"max error {err.max().item():.3e}, bound {bound.max().item():.3e}"
