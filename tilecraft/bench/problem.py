"""GEMM problems: dtypes, random inputs, the float64 reference, and the error measure.

Conventions, fixed here so every contender sees the same thing:

* C[M,N] = A[M,K] @ B[K,N]. A is row-major. B is column-major, i.e. the transpose of a row-major (N,K)
  tensor: the ``nn.Linear`` weight layout, K-major for both operands, which is what Hopper's fp8 MMA
  and ``torch._scaled_mm`` require and what LLM inference actually runs.
* Inputs are random normal (never zeros: tensor cores clock higher on zeros), cast to the input dtype,
  so the float64 reference is computed on exactly the values the kernel sees.
* ``w4a16``: bf16 activations times 4-bit weights with a bf16 scale and zero per group of 128 along K,
  dequantized as ``(q - 8) * scale + zero`` (torch's tinygemm convention).
* Correctness is the relative Frobenius error ``||C - R||_F / ||R||_F`` against the float64 reference,
  with a tolerance per dtype a few times the rounding error of the output type.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "DtypeSpec",
    "DTYPES",
    "GemmProblem",
    "GemmInputs",
    "W4_GROUP",
    "make_inputs",
    "dequantize_w4",
    "reference",
    "rel_error",
]

W4_GROUP = 128


@dataclass(frozen=True)
class DtypeSpec:
    """What a GEMM "dtype" means: input/output torch dtypes, bytes per element, tolerance, ceiling."""

    name: str
    torch_in: str  # attribute of torch, e.g. "bfloat16"
    torch_out: str
    a_bytes: float
    b_bytes: float
    c_bytes: float
    tol: float
    ceiling: str  # which measured GEMM ceiling bounds it
    note: str = ""


# Tolerances: bf16 output rounding alone gives a relative Frobenius error near 1.6e-3, fp16 near 2e-4,
# TF32 inputs near 1e-3, IEEE fp32 accumulation at K=28672 about 1e-6. The bounds leave a few times
# that, and fp32's 1e-4 deliberately fails a kernel that quietly computes in TF32.
DTYPES: dict[str, DtypeSpec] = {
    "fp16": DtypeSpec("fp16", "float16", "float16", 2, 2, 2, 1e-3, "fp16"),
    "bf16": DtypeSpec("bf16", "bfloat16", "bfloat16", 2, 2, 2, 5e-3, "bf16"),
    "fp32": DtypeSpec("fp32", "float32", "float32", 4, 4, 4, 1e-4, "fp32", "IEEE fp32, TF32 off"),
    "tf32": DtypeSpec("tf32", "float32", "float32", 4, 4, 4, 3e-3, "tf32", "fp32 storage, TF32 tensor cores"),
    "fp8": DtypeSpec("fp8", "float8_e4m3fn", "bfloat16", 1, 1, 2, 5e-3, "fp8", "e4m3 x e4m3, unit scales, bf16 out"),
    "w4a16": DtypeSpec(
        "w4a16", "bfloat16", "bfloat16", 2, 0.5 + 4 / W4_GROUP, 2, 5e-3, "bf16",
        f"bf16 x int4 (group {W4_GROUP}, bf16 scale+zero)",
    ),
}


@dataclass(frozen=True)
class GemmProblem:
    """One GEMM to run: sizes, dtype name (a key of :data:`DTYPES`) and device."""

    m: int
    n: int
    k: int
    dtype: str = "bf16"
    device: str = "cuda"

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown GEMM dtype {self.dtype!r}; known: {', '.join(DTYPES)}")

    @property
    def spec(self) -> DtypeSpec:
        """The dtype's :class:`DtypeSpec`."""
        return DTYPES[self.dtype]

    @property
    def flops(self) -> int:
        """2*M*N*K."""
        return 2 * self.m * self.n * self.k

    @property
    def bytes(self) -> float:
        """Compulsory HBM bytes: A and B read once, C written once."""
        s = self.spec
        return self.m * self.k * s.a_bytes + self.k * self.n * s.b_bytes + self.m * self.n * s.c_bytes


@dataclass
class GemmInputs:
    """One copy of a problem's canonical inputs.

    ``a`` (M,K) row-major; ``b`` (K,N) column-major view. For ``w4a16``, ``b`` is None and the weight is
    ``q`` (N,K) uint8 in [0,16) with ``scales``/``zeros`` (N, K/group) bf16.
    """

    problem: GemmProblem
    a: Any
    b: Any = None
    q: Any = None
    scales: Any = None
    zeros: Any = None

    def tensors(self) -> list[Any]:
        """The tensors of this copy (for byte counts)."""
        return [t for t in (self.a, self.b, self.q, self.scales, self.zeros) if t is not None]


def make_inputs(problem: GemmProblem, generator: Any = None) -> GemmInputs:
    """Random inputs for ``problem`` on its device (never zeros)."""
    import torch

    m, n, k, dev = problem.m, problem.n, problem.k, problem.device
    in_dtype = getattr(torch, problem.spec.torch_in)

    def randn(*shape: int) -> Any:
        return torch.randn(*shape, device=dev, dtype=torch.float32, generator=generator)

    a = randn(m, k).to(in_dtype)
    if problem.dtype == "w4a16":
        if k % W4_GROUP:
            raise ValueError(f"w4a16 needs K divisible by {W4_GROUP}, got K={k}")
        groups = k // W4_GROUP
        q = torch.randint(0, 16, (n, k), device=dev, dtype=torch.uint8, generator=generator)
        # Scales around 0.2 and small zeros keep dequantized weights near unit variance, like randn.
        scales = (0.15 + 0.1 * torch.rand(n, groups, device=dev, generator=generator)).to(torch.bfloat16)
        zeros = (0.1 * randn(n, groups)).to(torch.bfloat16)
        return GemmInputs(problem, a=a, q=q, scales=scales, zeros=zeros)
    b = randn(n, k).to(in_dtype).t()
    return GemmInputs(problem, a=a, b=b)


def dequantize_w4(inputs: GemmInputs, dtype: Any = None) -> Any:
    """The (N,K) weight of a w4a16 problem, ``(q - 8) * scale + zero`` per group, in ``dtype``
    (default bf16; float64 for the reference)."""
    import torch

    dtype = dtype or torch.bfloat16
    n, k = inputs.q.shape
    g = k // inputs.scales.shape[1]
    q = inputs.q.to(torch.float64).view(n, -1, g)
    w = (q - 8) * inputs.scales.to(torch.float64)[:, :, None] + inputs.zeros.to(torch.float64)[:, :, None]
    return w.view(n, k).to(dtype)


def reference(inputs: GemmInputs) -> Any:
    """C in float64 from exactly the values the contenders see."""
    import torch

    a = inputs.a.to(torch.float32).to(torch.float64)
    if inputs.problem.dtype == "w4a16":
        return a @ dequantize_w4(inputs, torch.float64).t()
    return a @ inputs.b.to(torch.float32).to(torch.float64)


def rel_error(out: Any, ref: Any) -> float:
    """Relative Frobenius error ``||out - ref|| / ||ref||`` in float64; inf when out has NaN/Inf."""
    import torch

    o = out.to(torch.float64)
    if not bool(torch.isfinite(o).all()):
        return float("inf")
    denom = float(torch.linalg.vector_norm(ref))
    num = float(torch.linalg.vector_norm(o - ref))
    return num / denom if denom > 0 else num
