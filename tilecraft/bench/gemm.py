"""The GEMM sweep: for every shape, random inputs, a float64 reference, every contender checked and then
timed side by side, and the numbers that matter (TFLOP/s, GB/s, ratio to cuBLAS, % of the floor).

A contender that cannot run is recorded as ``missing`` (with the reason), one whose result is off by
more than the dtype's tolerance as ``wrong`` (and not timed), one that raises as ``error``.
"""
from __future__ import annotations

import datetime as _dt
import json
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from tilecraft.bench.contenders import Kernel, Missing, resolve
from tilecraft.bench.problem import DTYPES, GemmProblem, make_inputs, reference, rel_error
from tilecraft.bench.progress import Progress
from tilecraft.bench.roofline import Ceilings, gbps, pct_of_floor, tflops
from tilecraft.bench.rotation import DEFAULT_L2_BYTES, copies_for_rotation, l2_cache_bytes, tensor_bytes
from tilecraft.bench.shapes import GemmShape
from tilecraft.bench.timing import Timer, TimingResult

__all__ = ["GemmRecord", "GemmSweep", "run_gemm_sweep", "environment", "demo_gemm", "STATUSES"]

STATUSES = ("ok", "wrong", "missing", "error")


@dataclass
class GemmRecord:
    """One contender on one shape. Times in ms; ``ratio`` is baseline time / this time (above 1 means
    faster than the baseline, cuBLAS by default); ``pct_floor`` is floor time / this time in percent."""

    shape: str
    m: int
    n: int
    k: int
    dtype: str
    contender: str
    status: str
    detail: str = ""
    rel_err: float | None = None
    tol: float | None = None
    copies: int = 0
    median_ms: float | None = None
    p10_ms: float | None = None
    p90_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    iqr_ms: float | None = None
    n_timed: int = 0
    tflops: float | None = None
    gbps: float | None = None
    ratio: float | None = None
    floor_ms: float | None = None
    pct_floor: float | None = None
    bound: str | None = None
    timing: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """Checked correct and timed."""
        return self.status == "ok"

    def set_timing(self, res: TimingResult, flops: float, nbytes: float) -> None:
        """Fill the time fields and rates from a timing result."""
        self.median_ms, self.p10_ms, self.p90_ms = res.median_ms, res.p10_ms, res.p90_ms
        self.min_ms, self.max_ms, self.iqr_ms = res.min_ms, res.max_ms, res.iqr_ms
        self.n_timed = res.n
        self.tflops = tflops(flops, res.median_ms * 1e-3)
        self.gbps = gbps(nbytes, res.median_ms * 1e-3)
        self.timing = res.to_dict()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (inf errors become the string "inf")."""
        d = asdict(self)
        if d["rel_err"] is not None and d["rel_err"] == float("inf"):
            d["rel_err"] = "inf"
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GemmRecord":
        """Inverse of :meth:`to_dict`."""
        d = dict(d)
        if d.get("rel_err") == "inf":
            d["rel_err"] = float("inf")
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


@dataclass
class GemmSweep:
    """A sweep's records plus what is needed to trust them: environment, settings, ceilings."""

    meta: dict[str, Any]
    records: list[GemmRecord] = field(default_factory=list)
    ceilings: Ceilings | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "format": "tilecraft.bench.gemm/1",
            "meta": self.meta,
            "ceilings": self.ceilings.to_dict() if self.ceilings else None,
            "records": [r.to_dict() for r in self.records],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GemmSweep":
        """Inverse of :meth:`to_dict`."""
        return cls(
            meta=dict(d.get("meta", {})),
            records=[GemmRecord.from_dict(r) for r in d.get("records", [])],
            ceilings=Ceilings.from_dict(d["ceilings"]) if d.get("ceilings") else None,
        )

    def save_json(self, path: str | Path) -> Path:
        """Write the sweep as JSON (creating parent directories); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n")
        return path

    @classmethod
    def load_json(cls, path: str | Path) -> "GemmSweep":
        """Read a sweep written by :meth:`save_json`."""
        return cls.from_dict(json.loads(Path(path).read_text()))

    def failures(self) -> list[GemmRecord]:
        """Records whose contender was wrong or raised."""
        return [r for r in self.records if r.status in ("wrong", "error")]


def environment(device: str = "cuda") -> dict[str, Any]:
    """Date, host, device and library versions, for the record."""
    env: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "host": platform.node(),
    }
    try:
        import torch

        env["torch"] = torch.__version__
        env["cuda"] = torch.version.cuda
        if device.startswith("cuda") and torch.cuda.is_available():
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            env["device"] = props.name
            env["sm"] = f"{props.major}.{props.minor}"
            env["sms"] = props.multi_processor_count
            env["l2_bytes"] = int(getattr(props, "L2_cache_size", 0) or 0) or None
            env["memory_bytes"] = props.total_memory
        else:
            env["device"] = "cpu"
    except Exception as e:
        env["torch"] = f"unavailable ({type(e).__name__})"
    try:
        import triton

        env["triton"] = triton.__version__
    except Exception:
        env["triton"] = None
    return env


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _free(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def _contender_order(contenders: Sequence[str], baseline: str | None) -> list[str]:
    names = [c for c in dict.fromkeys(contenders) if c]
    if baseline and baseline not in names:
        names.insert(0, baseline)
    elif baseline:
        names.remove(baseline)
        names.insert(0, baseline)
    return names


def run_gemm_sweep(
    shapes: Iterable[GemmShape],
    dtype: str = "bf16",
    contenders: Sequence[str] = ("cublas", "triton"),
    *,
    baseline: str | None = "cublas",
    device: str = "cuda",
    timer: Callable[[Callable[..., Any], Sequence[Any]], TimingResult] | None = None,
    ceilings: Ceilings | None = None,
    seed: int = 0,
    l2_bytes: int | None = None,
    rotation_factor: float = 3.0,
    max_rotation_bytes: int = 8 << 30,
    progress: bool | None = None,
    on_record: Callable[[GemmRecord], None] | None = None,
    meta: dict[str, Any] | None = None,
) -> GemmSweep:
    """Check and time every contender on every shape.

    ``baseline`` is always run (first) and is the denominator of ``ratio``. ``timer`` defaults to
    :class:`~tilecraft.bench.timing.Timer` with its defaults; tests pass a fake. ``ceilings`` gives
    ``% of floor`` (omit it and those columns stay empty). Inputs rotate among enough copies that one
    rotation reads ``rotation_factor`` x L2 (capped at ``max_rotation_bytes`` of copies).
    """
    import torch

    if dtype not in DTYPES:
        raise ValueError(f"unknown GEMM dtype {dtype!r}; known: {', '.join(DTYPES)}")
    shapes = list(shapes)
    names = _contender_order(contenders, baseline)
    timer = timer or Timer()
    if l2_bytes is None:
        l2_bytes = l2_cache_bytes() if device.startswith("cuda") else DEFAULT_L2_BYTES
    spec = DTYPES[dtype]
    sweep = GemmSweep(
        meta={
            **environment(device),
            "dtype": dtype,
            "dtype_note": spec.note,
            "contenders": names,
            "baseline": baseline,
            "seed": seed,
            "l2_bytes_used_for_rotation": l2_bytes,
            "rotation_factor": rotation_factor,
            "timer": {k: v for k, v in vars(timer).items() if not k.startswith("_")} if isinstance(timer, Timer) else repr(timer),
            **(meta or {}),
        },
        ceilings=ceilings,
    )
    gen = torch.Generator(device=device)
    floor_ok = ceilings is not None and spec.ceiling in ceilings.flops_per_s

    with Progress(len(shapes) * len(names), f"gemm {dtype}", enabled=progress) as bar:
        for shape in shapes:
            problem = GemmProblem(shape.m, shape.n, shape.k, dtype, device)
            floor = ceilings.floor(problem.flops, problem.bytes, spec.ceiling) if floor_ok else None
            gen.manual_seed(seed)
            recs: list[GemmRecord] = []
            copies: list[Any] = []
            ref = None
            setup_error = ""
            try:
                copies.append(make_inputs(problem, gen))
                ref = reference(copies[0])
            except Exception as e:
                setup_error = f"inputs/reference failed: {type(e).__name__}: {e}"
            for name in names:
                bar.draw(f"{shape.name} {name}")
                rec = GemmRecord(shape.name, shape.m, shape.n, shape.k, dtype, name, "error", tol=spec.tol)
                if floor is not None:
                    rec.floor_ms, rec.bound = floor.seconds * 1e3, floor.bound
                if setup_error:
                    rec.detail = setup_error
                else:
                    _run_one(rec, resolve(name, problem), problem, copies, ref, gen, timer, l2_bytes,
                             rotation_factor, max_rotation_bytes)
                recs.append(rec)
                bar.update(1, f"{shape.name} {name}")
            base = next((r for r in recs if r.contender == baseline and r.ok), None)
            for r in recs:
                if r.ok and base is not None and r.median_ms:
                    r.ratio = base.median_ms / r.median_ms
                if r.ok and r.floor_ms is not None and r.median_ms:
                    r.pct_floor = pct_of_floor(r.floor_ms, r.median_ms)
                sweep.records.append(r)
                if on_record:
                    on_record(r)
            del copies, ref
            _free(device)
    return sweep


def _run_one(
    rec: GemmRecord,
    kernel: Kernel | Missing,
    problem: GemmProblem,
    copies: list[Any],
    ref: Any,
    gen: Any,
    timer: Callable[..., TimingResult],
    l2_bytes: int,
    rotation_factor: float,
    max_rotation_bytes: int,
) -> None:
    if isinstance(kernel, Missing):
        rec.status, rec.detail = "missing", kernel.reason
        return
    rec.detail = kernel.label
    tol = kernel.tol if kernel.tol is not None else rec.tol
    rec.tol = tol
    arg_sets: list[tuple] = []
    try:
        args0 = kernel.prepare(copies[0])
        out = kernel.fn(*args0)
        _sync(problem.device)
        if tuple(out.shape) != (problem.m, problem.n):
            rec.status = "wrong"
            rec.detail = f"output shape {tuple(out.shape)}, expected {(problem.m, problem.n)}; {kernel.label}"
            return
        rec.rel_err = rel_error(out, ref)
        del out
        if not rec.rel_err <= tol:
            rec.status = "wrong"
            rec.detail = f"relative error {rec.rel_err:.3g} > tolerance {tol:.3g}; {kernel.label}"
            return
        per_call = tensor_bytes(*(a for a in args0 if hasattr(a, "element_size")))
        n = copies_for_rotation(max(per_call, 1), l2_bytes, factor=rotation_factor, max_bytes=max_rotation_bytes)
        while len(copies) < n:
            copies.append(make_inputs(problem, gen))
        arg_sets = [args0] + [kernel.prepare(c) for c in copies[1:n]]
        rec.copies = n
        res = timer(kernel.fn, arg_sets)
        rec.set_timing(res, problem.flops, problem.bytes)
        rec.status = "ok"
    except Exception as e:
        rec.status = "error"
        rec.detail = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}; {kernel.label}"
    finally:
        del arg_sets


def demo_gemm(
    shapes: Sequence[GemmShape] | None = None,
    dtype: str = "bf16",
    contenders: Sequence[str] = ("cublas", "triton", "tilecraft"),
    stream: Any = None,
) -> GemmSweep | None:
    """The closing act of ``tilecraft demo`` on a GPU: a short GEMM comparison against cuBLAS.

    bf16 4096^3 and a Llama-3-8B decode and prefill projection; cuBLAS, Triton, and tilecraft's kernel
    if one is registered (otherwise listed as missing). Prints a table; returns the sweep (None without
    a GPU).
    """
    import sys

    from tilecraft.bench.report import format_table

    stream = stream or sys.stdout
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except Exception:
        has_gpu = False
    if not has_gpu:
        print("GEMM vs cuBLAS: skipped (no CUDA device)", file=stream)
        return None
    shapes = list(shapes) if shapes is not None else [
        GemmShape(4096, 4096, 4096),
        GemmShape(16, 28672, 4096, "llama8b.gate_up"),
        GemmShape(4096, 28672, 4096, "llama8b.gate_up"),
    ]
    sweep = run_gemm_sweep(shapes, dtype, contenders, timer=Timer(warmup_ms=10, rep_ms=50), progress=False)
    print(f"GEMM {dtype} vs cuBLAS on {sweep.meta.get('device')} (median of CUDA-event timings; "
          "ratio > 1 = faster than cuBLAS):", file=stream)
    print(format_table(sweep.records, show_floor=False), file=stream)
    return sweep
