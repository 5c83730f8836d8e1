"""Roofline floors: the least time a kernel can take given its FLOPs, its bytes, and this device's ceilings.

The ceilings are measured on the spot rather than read from a datasheet: a datasheet peak (989 TFLOP/s
dense bf16 on H100 SXM) is a clock-and-power fiction no kernel reaches, while a large cuBLAS GEMM and
a large device-to-device copy are what the hardware actually delivers today, on this board, at this
temperature. "% of floor" is therefore "fraction of what the best library code achieves at its best
shape", which is the bar a new kernel must clear.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "Ceilings",
    "Floor",
    "floor_time",
    "gemm_flops",
    "gemm_bytes",
    "tflops",
    "gbps",
    "pct_of_floor",
    "measure_copy_bandwidth",
    "measure_gemm_flops",
    "measure_ceilings",
    "add_gemm_ceiling",
]


@dataclass(frozen=True)
class Floor:
    """Floor time of one operation and which ceiling sets it."""

    seconds: float
    compute_seconds: float
    memory_seconds: float

    @property
    def bound(self) -> str:
        """``"compute"`` or ``"memory"``: the ceiling that gives the larger (binding) time."""
        return "compute" if self.compute_seconds >= self.memory_seconds else "memory"


def floor_time(flops: float, bytes_moved: float, peak_flops_per_s: float, bytes_per_s: float) -> Floor:
    """``max(flops / peak, bytes / bandwidth)``: neither the math units nor memory can go faster."""
    if peak_flops_per_s <= 0 or bytes_per_s <= 0:
        raise ValueError("ceilings must be positive")
    if flops < 0 or bytes_moved < 0:
        raise ValueError("flops and bytes must be non-negative")
    c = flops / peak_flops_per_s
    m = bytes_moved / bytes_per_s
    return Floor(seconds=max(c, m), compute_seconds=c, memory_seconds=m)


def gemm_flops(m: int, n: int, k: int) -> int:
    """Multiply-adds of C[m,n] = A[m,k] B[k,n], counted as two FLOPs each."""
    return 2 * m * n * k


def gemm_bytes(m: int, n: int, k: int, a_bytes: float, b_bytes: float, c_bytes: float) -> float:
    """Compulsory HBM traffic of a GEMM: read A and B once, write C once (element sizes in bytes; may be
    fractional, e.g. 0.5 for int4)."""
    return m * k * a_bytes + k * n * b_bytes + m * n * c_bytes


def tflops(flops: float, seconds: float) -> float:
    """Achieved TFLOP/s."""
    return flops / seconds / 1e12


def gbps(bytes_moved: float, seconds: float) -> float:
    """Achieved GB/s (10^9 bytes)."""
    return bytes_moved / seconds / 1e9


def pct_of_floor(floor_seconds: float, measured_seconds: float) -> float:
    """How close a measured time is to the floor, in percent (100 = at the floor)."""
    return 100.0 * floor_seconds / measured_seconds


@dataclass
class Ceilings:
    """Measured ceilings of one device.

    ``copy_bytes_per_s`` counts read plus write bytes of a device-to-device copy (a 1 GB copy moves 2 GB).
    ``flops_per_s`` maps a GEMM dtype name (``"bf16"``, ``"fp16"``, ``"fp32"``, ``"tf32"``, ``"fp8"``) to
    the rate of a large cuBLAS GEMM in that dtype.
    """

    device: str
    copy_bytes_per_s: float
    flops_per_s: dict[str, float] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    def peak_flops(self, dtype: str) -> float:
        """The measured GEMM ceiling for ``dtype``; raises KeyError naming what was measured."""
        try:
            return self.flops_per_s[dtype]
        except KeyError:
            raise KeyError(f"no GEMM ceiling measured for {dtype!r} (have {sorted(self.flops_per_s)})") from None

    def floor(self, flops: float, bytes_moved: float, dtype: str) -> Floor:
        """Floor time of an operation in ``dtype`` on this device."""
        return floor_time(flops, bytes_moved, self.peak_flops(dtype), self.copy_bytes_per_s)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with rates also in TB/s and TFLOP/s for reading."""
        d = asdict(self)
        d["copy_TBps"] = self.copy_bytes_per_s / 1e12
        d["TFLOPs"] = {k: v / 1e12 for k, v in self.flops_per_s.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Ceilings":
        """Inverse of :meth:`to_dict`."""
        return cls(
            device=d["device"],
            copy_bytes_per_s=float(d["copy_bytes_per_s"]),
            flops_per_s={k: float(v) for k, v in d.get("flops_per_s", {}).items()},
            notes=dict(d.get("notes", {})),
        )


def measure_copy_bandwidth(nbytes: int = 1 << 30, timer: Any = None) -> tuple[float, Any]:
    """Read+write bytes per second of a ``nbytes`` device-to-device copy of random data (CUDA).

    Returns ``(bytes_per_s, TimingResult)``; the rate uses the median time.
    """
    import torch

    from tilecraft.bench.timing import Timer

    timer = timer or Timer(rep_ms=200, min_reps=20)
    src = torch.randn(nbytes // 4, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    res = timer(dst.copy_, [(src,)])
    del src, dst
    return 2 * nbytes / (res.median_ms * 1e-3), res


def measure_gemm_flops(dtype: str = "bf16", size: int = 8192, timer: Any = None) -> tuple[float, Any]:
    """FLOP/s of a ``size``-cubed cuBLAS GEMM on random data in ``dtype`` (CUDA).

    Random, not zeros: tensor cores draw less power on zeros and clock higher (about 13% on H200 bf16).
    Returns ``(flops_per_s, TimingResult)``; the rate uses the median time.
    """
    import torch

    from tilecraft.bench.contenders import resolve
    from tilecraft.bench.gemm import GemmProblem, make_inputs
    from tilecraft.bench.timing import Timer

    timer = timer or Timer(rep_ms=300, min_reps=10)
    problem = GemmProblem(size, size, size, dtype)
    kernel = resolve("cublas", problem)
    if not callable(getattr(kernel, "fn", None)):
        raise RuntimeError(f"cannot measure the {dtype} GEMM ceiling: {kernel}")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    inputs = make_inputs(problem, gen)
    args = kernel.prepare(inputs)
    res = timer(kernel.fn, [args])
    del inputs, args
    return gemm_flops(size, size, size) / (res.median_ms * 1e-3), res


def measure_ceilings(
    dtypes: tuple[str, ...] = ("bf16",),
    *,
    copy_bytes: int = 1 << 30,
    gemm_size: int = 8192,
    timer: Any = None,
) -> Ceilings:
    """Measure the copy bandwidth and the GEMM rate of each dtype in ``dtypes`` on the current GPU."""
    import torch

    name = torch.cuda.get_device_name()
    bw, bw_res = measure_copy_bandwidth(copy_bytes, timer)
    ceilings = Ceilings(device=name, copy_bytes_per_s=bw)
    ceilings.notes["copy"] = (
        f"{copy_bytes / 2**20:.0f} MiB D2D copy, read+write bytes, median of {bw_res.n} "
        f"(p10-p90 {2 * copy_bytes / bw_res.p90_ms / 1e9:.0f}-{2 * copy_bytes / bw_res.p10_ms / 1e9:.0f} GB/s)"
    )
    for dt in dtypes:
        add_gemm_ceiling(ceilings, dt, gemm_size=gemm_size, timer=timer)
    return ceilings


def add_gemm_ceiling(ceilings: Ceilings, dtype: str, *, gemm_size: int = 8192, timer: Any = None) -> float:
    """Measure and record the GEMM ceiling of ``dtype`` if not already there; returns it."""
    if dtype not in ceilings.flops_per_s:
        rate, res = measure_gemm_flops(dtype, gemm_size, timer)
        ceilings.flops_per_s[dtype] = rate
        ceilings.notes[f"gemm_{dtype}"] = f"cuBLAS {dtype} {gemm_size}^3 (random inputs), median of {res.n}"
    return ceilings.flops_per_s[dtype]
