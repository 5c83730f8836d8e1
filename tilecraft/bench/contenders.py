"""The contender registry: who a tilecraft kernel is measured against.

A contender is a name and a factory. The factory gets a :class:`~tilecraft.bench.problem.GemmProblem` and
returns either a :class:`Kernel` (an untimed ``prepare`` that turns canonical inputs into arguments, and
the timed ``fn``) or :class:`Missing` with the reason it cannot run here. Missing contenders are printed
as missing, never dropped silently.

Built in: ``cublas`` (``torch.matmul``; for fp8, ``torch._scaled_mm``, which is cuBLASLt; for w4a16, a
bf16 matmul on pre-dequantized weights, i.e. what a user without a mixed-input kernel calls),
``triton`` (:mod:`tilecraft.bench.triton_gemm`), ``scaled_mm`` (fp8 only), ``int4_mm`` (w4a16 only,
``torch.ops.aten._weight_int4pack_mm``), and ``tilecraft``.

tilecraft's own kernels register themselves when their module is imported::

    from tilecraft.bench import register_contender, Kernel, Missing

    def _factory(problem):
        if problem.dtype not in ("bf16", "fp16"):
            return Missing(f"tilecraft GEMM has no {problem.dtype} kernel yet")
        return Kernel(fn=my_gemm, prepare=lambda x: (x.a, x.b), label="tilecraft sm90 wgmma")

    register_contender("tilecraft", _factory, "tilecraft's GEMM", replace=True)

The registry imports :data:`AUTOLOAD` modules (``tilecraft.gemm``) once before resolving names, so the
kernels show up without the bench importing them by hand; until such a module exists the built-in
``tilecraft`` entry reports itself missing with the import error.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Union

from tilecraft.bench.problem import GemmInputs, GemmProblem, dequantize_w4

__all__ = [
    "Kernel",
    "Missing",
    "ContenderFactory",
    "AUTOLOAD",
    "register_contender",
    "unregister_contender",
    "list_contenders",
    "resolve",
]


@dataclass
class Kernel:
    """A runnable contender for one problem.

    ``prepare(inputs) -> tuple`` converts one copy of canonical inputs into ``fn``'s arguments (layout
    changes, packing, quantization: all outside the timed region). ``fn(*args)`` is timed and returns C.
    ``label`` says what actually runs (library, precision, config). ``tol`` overrides the dtype's
    tolerance (rarely justified; say why in ``label``).
    """

    fn: Callable[..., Any]
    prepare: Callable[[GemmInputs], tuple]
    label: str = ""
    tol: float | None = None


@dataclass(frozen=True)
class Missing:
    """A contender that cannot run here, and why (no CUDA, op not in this torch build, wrong dtype...)."""

    reason: str

    def __str__(self) -> str:
        return f"missing: {self.reason}"


ContenderFactory = Callable[[GemmProblem], Union[Kernel, Missing]]


@dataclass(frozen=True)
class _Entry:
    factory: ContenderFactory
    description: str


_REGISTRY: dict[str, _Entry] = {}

#: Modules imported (once, errors remembered) before names are resolved; they register contenders.
AUTOLOAD: list[str] = ["tilecraft.gemm"]
_autoload_errors: dict[str, str] = {}
_autoloaded = False


def register_contender(name: str, factory: ContenderFactory, description: str = "", *, replace: bool = False) -> None:
    """Add a contender; ``replace=True`` to override an existing name (e.g. the ``tilecraft`` placeholder)."""
    if not name or any(c in name for c in ", "):
        raise ValueError(f"contender names are non-empty, without commas or spaces: {name!r}")
    if name in _REGISTRY and not replace and not getattr(_REGISTRY[name].factory, "_placeholder", False):
        raise ValueError(f"contender {name!r} is already registered (pass replace=True to override)")
    _REGISTRY[name] = _Entry(factory, description)


def unregister_contender(name: str) -> None:
    """Remove a contender (tests use this to clean up)."""
    _REGISTRY.pop(name, None)


def _autoload() -> None:
    global _autoloaded
    if _autoloaded:
        return
    _autoloaded = True
    for mod in AUTOLOAD:
        try:
            importlib.import_module(mod)
        except Exception as e:  # a broken kernel module must not take the benchmark down
            _autoload_errors[mod] = f"{type(e).__name__}: {e}"


def list_contenders() -> dict[str, str]:
    """Registered names and their descriptions."""
    _autoload()
    return {name: e.description for name, e in _REGISTRY.items()}


def resolve(name: str, problem: GemmProblem) -> Kernel | Missing:
    """The contender ``name`` for ``problem``: a :class:`Kernel`, or :class:`Missing` with the reason
    (unknown names and factories that raise are reported as missing too)."""
    _autoload()
    entry = _REGISTRY.get(name)
    if entry is None:
        return Missing(f"no contender named {name!r} (known: {', '.join(_REGISTRY)})")
    try:
        out = entry.factory(problem)
    except Exception as e:
        return Missing(f"factory raised {type(e).__name__}: {e}")
    if not isinstance(out, (Kernel, Missing)):
        return Missing(f"factory returned {type(out).__name__}, not Kernel or Missing")
    return out


# ---------------------------------------------------------------------------------------------------
# Built-in contenders


def _torch_cuda(problem: GemmProblem) -> Missing | None:
    """Missing when torch or a CUDA device is absent, else None."""
    try:
        import torch
    except Exception as e:
        return Missing(f"torch not importable ({type(e).__name__}: {e})")
    if problem.device.startswith("cuda") and not torch.cuda.is_available():
        return Missing("no CUDA device (torch.cuda.is_available() is False)")
    return None


def _args_ab(x: GemmInputs) -> tuple:
    return (x.a, x.b)


def _args_dequant(x: GemmInputs) -> tuple:
    return (x.a, dequantize_w4(x).t())


def _sm(problem: GemmProblem) -> tuple[int, int]:
    import torch

    return torch.cuda.get_device_capability() if problem.device.startswith("cuda") else (0, 0)


def _cublas(problem: GemmProblem) -> Kernel | Missing:
    miss = _torch_cuda(problem)
    if miss:
        return miss
    import torch

    if problem.dtype == "fp8":
        k = _scaled_mm(problem)
        if isinstance(k, Kernel):
            k.label = "torch._scaled_mm (cuBLASLt)"
        return k
    if problem.dtype == "w4a16":
        return Kernel(fn=torch.matmul, prepare=_args_dequant, label="torch.matmul on dequantized bf16 weights")
    tf32 = problem.dtype == "tf32"
    matmul_flags = torch.backends.cuda.matmul

    def fn(a: Any, b: Any) -> Any:
        # Checked on every call: another contender or the user may have flipped the global flag.
        if matmul_flags.allow_tf32 != tf32:
            matmul_flags.allow_tf32 = tf32
        return torch.matmul(a, b)

    return Kernel(fn=fn, prepare=_args_ab, label=f"torch.matmul (cuBLAS), allow_tf32={tf32}")


def _triton(problem: GemmProblem) -> Kernel | Missing:
    miss = _torch_cuda(problem)
    if miss:
        return miss
    if not problem.device.startswith("cuda"):
        return Missing("the Triton contender runs on CUDA only")
    try:
        from tilecraft.bench import triton_gemm
    except Exception as e:
        return Missing(f"triton not usable ({type(e).__name__}: {e})")
    if problem.dtype == "fp8" and _sm(problem) < (8, 9):
        return Missing("Triton fp8 dot needs sm_89 or newer")
    precision = "tf32" if problem.dtype == "tf32" else "ieee"
    mm = triton_gemm.matmul

    def fn(a: Any, b: Any) -> Any:
        return mm(a, b, precision=precision)

    prepare = _args_dequant if problem.dtype == "w4a16" else _args_ab
    what = {"fp32": "fp32 IEEE (input_precision='ieee')", "tf32": "TF32 tensor cores"}.get(problem.dtype, "tensor cores")
    extra = ", dequantized bf16 weights" if problem.dtype == "w4a16" else ""
    return Kernel(fn=fn, prepare=prepare, label=f"Triton tiled GEMM, autotuned, {what}{extra}")


def _scaled_mm(problem: GemmProblem) -> Kernel | Missing:
    if problem.dtype != "fp8":
        return Missing(f"torch._scaled_mm is an fp8 GEMM; not applicable to {problem.dtype}")
    miss = _torch_cuda(problem)
    if miss:
        return miss
    import torch

    if not hasattr(torch, "_scaled_mm"):
        return Missing(f"torch {torch.__version__} has no torch._scaled_mm")
    if problem.device.startswith("cuda") and _sm(problem) < (8, 9):
        return Missing(f"torch._scaled_mm needs sm_89 or newer, device is sm_{''.join(map(str, _sm(problem)))}")
    if problem.k % 16 or problem.n % 16:
        return Missing("torch._scaled_mm needs K and N divisible by 16")
    scales: dict[str, Any] = {}

    def prepare(x: GemmInputs) -> tuple:
        if "one" not in scales:
            scales["one"] = torch.ones((), device=x.a.device, dtype=torch.float32)
        return (x.a, x.b, scales["one"])

    def fn(a: Any, b: Any, one: Any) -> Any:
        out = torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        return out[0] if isinstance(out, tuple) else out  # torch < 2.5 returned (out, amax)

    return Kernel(fn=fn, prepare=prepare, label="torch._scaled_mm, per-tensor unit scales, bf16 out")


def _int4_mm(problem: GemmProblem) -> Kernel | Missing:
    if problem.dtype != "w4a16":
        return Missing(f"torch's int4 kernel is a w4a16 GEMM; not applicable to {problem.dtype}")
    miss = _torch_cuda(problem)
    if miss:
        return miss
    import torch

    aten = torch.ops.aten
    for op in ("_weight_int4pack_mm", "_convert_weight_to_int4pack"):
        if not hasattr(aten, op):
            return Missing(f"torch {torch.__version__} has no aten.{op}")
    if not problem.device.startswith("cuda"):
        return Missing("only the CUDA int4 kernel is benchmarked")
    if _sm(problem) < (8, 0):
        return Missing("aten._weight_int4pack_mm needs sm_80 or newer")
    inner_k_tiles = 8
    if problem.k % (inner_k_tiles * 16) or problem.n % 8:
        return Missing(f"aten._weight_int4pack_mm needs K % {inner_k_tiles * 16} == 0 and N % 8 == 0")

    def prepare(x: GemmInputs) -> tuple:
        # Two 4-bit values per byte, even K index in the high nibble (the CUDA op's convention), then the
        # op's own tensor-core tiling; scale and zero interleaved as (K/group, N, 2).
        q = x.q
        packed = ((q[:, ::2] << 4) | q[:, 1::2]).to(torch.uint8)
        w = aten._convert_weight_to_int4pack(packed.contiguous(), inner_k_tiles)
        sz = torch.stack([x.scales, x.zeros], dim=2).transpose(0, 1).contiguous()
        group = q.shape[1] // x.scales.shape[1]
        return (x.a, w, group, sz)

    def fn(a: Any, w: Any, group: int, sz: Any) -> Any:
        return aten._weight_int4pack_mm(a, w, group, sz)

    return Kernel(fn=fn, prepare=prepare, label="aten._weight_int4pack_mm (tinygemm), inner_k_tiles=8")


def _tilecraft_placeholder(problem: GemmProblem) -> Missing:
    why = "; ".join(f"{m}: {e}" for m, e in _autoload_errors.items()) or "no tilecraft GEMM registered"
    return Missing(f"tilecraft GEMM not available yet ({why})")


_tilecraft_placeholder._placeholder = True  # type: ignore[attr-defined]

register_contender("cublas", _cublas, "cuBLAS via torch.matmul (fp8: torch._scaled_mm)")
register_contender("triton", _triton, "Triton tiled GEMM (tilecraft/bench/triton_gemm.py)")
register_contender("scaled_mm", _scaled_mm, "torch._scaled_mm, fp8 only")
register_contender("int4_mm", _int4_mm, "torch.ops.aten._weight_int4pack_mm, w4a16 only")
register_contender("tilecraft", _tilecraft_placeholder, "tilecraft's GEMM kernels (registered by tilecraft.gemm)")
