"""``@tc.kernel``: a Python function traced into one CUDA C++ kernel per specialization, then compiled
and launched through the runtime.

Arguments decide the specialization:

- a parameter annotated ``tc.Constexpr`` is compile-time: any hashable value (ints, tuples, layouts,
  dtypes) that the body computes with in Python;
- a torch tensor becomes a global-memory tensor (a ``T* __restrict__`` parameter and its shape and
  strides as ``int`` parameters); a stride equal to 1 is compiled as the static 1, and a data pointer
  aligned to 16 bytes is known to be (both are part of the specialization);
- a Python int becomes an ``int`` parameter, except that 1 is compiled as the static 1 (as Triton
  does: unit strides and extents are common and worth knowing);
- a tensor's runtime stride is known to be a multiple of its largest power-of-two divisor up to 16,
  which is part of the specialization (Triton's divisibility specialization, for strides only: extents
  stay one specialization): a leading dimension that is a multiple of 4 floats lets ``copy`` use
  128-bit accesses along rows;
- a Python float becomes a ``float`` parameter; tuples and lists of these nest; other objects
  (layouts, dtypes, None, bools) are compile-time.

Only parameters the body uses appear in the C++ signature. The specialization key is these decisions
plus the Constexpr values; the compiled cubin is cached by the runtime on (source, options, arch,
versions). ``TILECRAFT_DUMP=<dir>`` writes each generated source to ``<dir>/<kernel>-<hash>.cu``.
"""
from __future__ import annotations

import hashlib
import inspect
import itertools
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from tilecraft import layout as _L
from tilecraft.dsl.expr import TraceError, resolve, var_expr
from tilecraft.dsl.memory import Param, PointerEngine, as_dtype
from tilecraft.dsl.trace import Trace
from tilecraft.tensor import Tensor

__all__ = ["BoundLaunch", "Constexpr", "kernel", "Kernel", "Specialization"]

_LAUNCH_KEYS = ("grid", "block", "stream", "arch", "cluster", "pdl", "cooperative", "max_ctas_per_sm")
#: a kernel's shared arrays stay static up to this many bytes, one dynamic buffer past it: CUDA's 48 KB
#: static limit less 1 KB for the ``__shared__`` variables of the headers a kernel includes, which the
#: trace does not see (tc::cta_arrive_last's flag: a 48 KB kernel failed ptxas with 49280 bytes)
_STATIC_SMEM_LIMIT = 47 * 1024


class Constexpr:
    """Annotation of a compile-time kernel parameter (``tile: tc.Constexpr``); ``tc.Constexpr[int]`` also works."""

    def __class_getitem__(cls, item: Any) -> type:
        return cls


def _is_constexpr(ann: Any) -> bool:
    if ann is Constexpr:
        return True
    return isinstance(ann, str) and ann.split("[")[0].split(".")[-1] == "Constexpr"


def _is_torch_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr") and hasattr(x, "stride")


def _pow2_divisor(n: int) -> int:
    """The largest power of two dividing n, at most 16 (0 counts as a multiple of 16)."""
    return min(16, n & -n) if n else 16


def _describe(x: Any, leaves: list[Any], where: list[Any] | None = None, path: tuple[int, ...] = ()) -> Any:
    """The hashable specialization of one runtime argument; appends its runtime leaves to `leaves`. With
    `where`, also appends, per leaf, how a later argument of the same specialization supplies it: the
    argument's `path` (index path into the arguments) for a tensor's address, a TMA map and a float,
    None for leaves the specialization fixes (extents, strides and ints, given the caller's promise of
    the same shapes; see ``Kernel.bind``)."""
    if _is_torch_tensor(x):
        strides = tuple(int(s) for s in x.stride())
        if any(s < 0 for s in strides):
            raise ValueError("tensors with negative strides are not supported; pass a copy")
        leaves.append(x)
        leaves.extend(int(n) for n in x.shape)
        leaves.extend(strides)
        if where is not None:
            where.append(("T", path))
            where.extend([None] * (2 * x.dim()))
        return ("T", str(x.dtype).replace("torch.", ""), x.dim(), tuple(s == 1 for s in strides),
                x.data_ptr() % 16 == 0, tuple(_pow2_divisor(s) for s in strides))
    if isinstance(x, bool) or x is None:
        return ("C", x, _typed(x))
    if type(x).__name__ == "TmaMap" and hasattr(x, "args"):
        leaves.append(x)
        if where is not None:
            where.append(("M", path))
        return ("M", x.key, x.static_args, x.smem)
    if isinstance(x, int):
        leaves.append(x)
        if where is not None:
            where.append(None)
        return ("I", x == 1)
    if isinstance(x, float) or type(x).__name__ in ("float32", "float64", "float16"):
        leaves.append(float(x))
        if where is not None:
            where.append(("F", path))
        return ("F",)
    if isinstance(x, (tuple, list)):
        return ("()", tuple(_describe(e, leaves, where, path + (i,)) for i, e in enumerate(x)))
    try:
        hash(x)
    except TypeError:
        raise TypeError(f"cannot pass {type(x).__name__} to a kernel: use a torch tensor, a number, a tuple, "
                        "or annotate the parameter tc.Constexpr") from None
    return ("C", x, _typed(x))


def _typed(x: Any) -> Any:
    """x's types, so that compile-time True, 1 and 1.0 (equal in Python) specialize apart."""
    if isinstance(x, (tuple, list)):
        return tuple(_typed(e) for e in x)
    return type(x).__name__


def _build(t: Trace, name: str, spec: Any, leaf: Iterator[int], top: str = "") -> Any:
    """The kernel-side value of one argument: runtime leaves become parameters (see module docstring)."""
    kind = spec[0]
    if kind == "C":
        return spec[1]
    if kind == "()":
        return tuple(_build(t, f"{name}_{i}", s, leaf, top or name) for i, s in enumerate(spec[1]))
    if kind == "I":
        i = next(leaf)
        if spec[1]:
            return 1
        return _param(t, name, "int", "int", i, soft=name != top)
    if kind == "F":
        return _param(t, name, "float", "float", next(leaf), soft=name != top)
    if kind == "M":
        from tilecraft.dsl.hopper import TmaMapArg
        v = t.new_var(name, temp=False)
        t.params.append(Param(v, "tmap", "const __grid_constant__ CUtensorMap", next(leaf)))
        return TmaMapArg(v, spec[2], spec[3])
    _, dtype_name, ndim, unit, aligned, stride_div = spec
    dt = as_dtype(dtype_name)
    v = t.new_var(name, temp=False)
    p = Param(v, "ptr", dt.ctype, next(leaf))
    t.params.append(p)
    shape = tuple(_param(t, f"{name}_shape_{d}", "int", "int", next(leaf), soft=True) for d in range(ndim))
    stride = []
    for d in range(ndim):
        i = next(leaf)  # a unit stride still occupies its leaf
        stride.append(1 if unit[d] else _param(t, f"{name}_stride_{d}", "int", "int", i, soft=True,
                                               div=stride_div[d]))
    eng = PointerEngine(v, dt, "gmem", 16 if aligned else dt.bits // 8, p)
    if ndim == 1:
        return Tensor(eng, _L.Layout(shape[0], stride[0]))
    return Tensor(eng, _L.Layout(shape, stride))


def _param(t: Trace, name: str, kind: str, ctype: str, index: int, soft: bool = False, div: int = 1) -> Any:
    v = t.new_var(name, temp=False)
    v.soft = soft
    t.params.append(Param(v, kind, ctype, index))
    return var_expr(v, ctype, div=div)


@dataclass
class Specialization:
    """One traced kernel: its C++ source, the runtime leaves its signature takes (indices into the
    call's leaves), dynamic shared memory bytes, the declared block size bound, and the extra ptxas flags
    it compiles with (``tc.ptxas_options``)."""

    name: str
    source: str
    used: tuple[int, ...]
    smem_bytes: int
    max_threads: int | None
    ptxas_options: tuple[str, ...] = ()


class Kernel:
    """A traced kernel. ``k[grid, block](*args)`` or ``k.launch(*args, grid=..., block=..., stream=None)``
    launch it; ``k.source(*args)`` returns the generated C++ and ``k.compile(*args, arch=...)`` the
    runtime kernel (resources included), both without a GPU; ``k.bind(*args, grid=..., block=...)`` resolves
    a launch once for repeated launches of one specialization (``BoundLaunch``)."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.signature = inspect.signature(fn)
        for pname in self.signature.parameters:
            if pname in _LAUNCH_KEYS:
                raise TypeError(f"kernel parameter name {pname!r} is reserved for launch settings")
        self.constexpr = {n for n, p in self.signature.parameters.items() if _is_constexpr(p.annotation)}
        params = list(self.signature.parameters.values())
        # positional calls of a plain signature bind without inspect (a launch binds its arguments twice)
        self._names = tuple(p.name for p in params)
        self._defaults = tuple(p.default for p in params)
        self._plain = all(p.kind == p.POSITIONAL_OR_KEYWORD for p in params)
        self._specs: dict[Any, Specialization] = {}
        self._compiled: dict[tuple[Any, str], Any] = {}

    # -- specialization
    def _bind(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """The arguments by parameter name, defaults applied (as ``Signature.bind`` + ``apply_defaults``)."""
        n = len(args)
        if not kwargs and self._plain and n <= len(self._names) and inspect.Parameter.empty not in self._defaults[n:]:
            return dict(zip(self._names, args + self._defaults[n:]))
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}: {e}") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def _key(self, args: tuple, kwargs: dict, where: list[Any] | None = None) -> tuple[Any, list[Any], dict[str, Any]]:
        arguments = self._bind(args, kwargs)
        leaves: list[Any] = []
        key = []
        for pos, (name, value) in enumerate(arguments.items()):
            if name in self.constexpr:
                try:
                    hash(value)
                except TypeError:
                    raise TypeError(f"{self.__name__}: Constexpr argument {name}={value!r} is not hashable") from None
                key.append((name, ("C", value, _typed(value))))
            else:
                key.append((name, _describe(value, leaves, where, (pos,))))
        return tuple(key), leaves, arguments

    def specialize(self, *args: Any, **kwargs: Any) -> Specialization:
        """Trace (or fetch) the specialization for these arguments."""
        key, _, _ = self._key(args, kwargs)
        return self._specialization(key)

    def _specialization(self, key: Any) -> Specialization:
        spec = self._specs.get(key)
        if spec is None:
            spec = self._trace(key)
            self._specs[key] = spec
        return spec

    def _trace(self, key: Any) -> Specialization:
        t = Trace(self.__name__, self.fn.__code__)
        leaf = itertools.count()
        values = {name: _build(t, name, s, leaf, name if s[0] != "()" else "") for name, s in key}
        pos, kw = [], {}
        for name, p in self.signature.parameters.items():
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                pos.append(values[name])
            elif p.kind == p.KEYWORD_ONLY:
                kw[name] = values[name]
            else:
                raise TypeError(f"{self.__name__}: *args/**kwargs parameters are not supported in kernels")
        t.run(self.fn, tuple(pos), kw)
        if len(t.stack) != 1:
            raise TraceError(f"{self.__name__}: a tc.range / tc.if_ block was left open (a `break` or `return` "
                             "inside a runtime loop or branch is not supported)")
        return _render(t, self.fn)

    # -- outputs
    def source(self, *args: Any, **kwargs: Any) -> str:
        """The generated CUDA C++ for these arguments (torch tensors may be on the CPU)."""
        return self.specialize(*args, **kwargs).source

    def compile(self, *args: Any, arch: str | None = None, **kwargs: Any) -> Any:
        """The compiled runtime kernel (``tilecraft.runtime.Kernel``) for these arguments and arch
        (default: the current GPU's); ``.resources`` has ptxas's registers, smem and spills."""
        key, _, _ = self._key(args, kwargs)
        return self._compile(key, arch)

    def _compile(self, key: Any, arch: str | None) -> Any:
        from tilecraft import runtime as rt
        from tilecraft.runtime.compiler import default_arch

        arch = rt.normalize_arch(arch) if arch is not None else default_arch()
        k = self._compiled.get((key, arch))
        if k is None:
            spec = self._specialization(key)
            options = {"ptxas_options": list(spec.ptxas_options)} if spec.ptxas_options else None
            module = rt.compile(spec.source, arch=arch, options=options, name=f"{spec.name}.cu")
            k = module.kernel(spec.name)
            self._compiled[(key, arch)] = k
        return k

    def launch(self, *args: Any, grid: Any, block: Any, stream: Any = None, cluster: Any = None, pdl: bool = False,
               cooperative: bool = False, max_ctas_per_sm: int | None = None, **kwargs: Any) -> None:
        """Launch on `grid` blocks of `block` threads (ints or tuples) on `stream` (default: torch's current),
        in clusters of `cluster` blocks when given (the grid counts blocks and is a multiple of it); ``pdl``:
        a programmatic dependent launch (see ``tilecraft.runtime.Kernel``; the kernel must call
        ``hopper.griddep_wait()`` before it touches what the stream's previous kernel reads or writes);
        ``cooperative``: a cooperative launch, whose blocks the driver starts only all together (for a kernel
        whose blocks wait on each other); ``max_ctas_per_sm``: at most that many of its CTAs share an SM (the
        launch asks for more shared memory than the kernel uses, ``tilecraft.runtime.Kernel.smem_for_occupancy``)."""
        key, leaves, _ = self._key(args, kwargs)
        spec = self._specialization(key)
        self._check_block(spec, block)
        k = self._compile(key, None)
        smem = _launch_smem(k, spec, block, max_ctas_per_sm)
        k(*[_leaf_value(leaves[i]) for i in spec.used], grid=grid, block=block, smem=smem, stream=stream,
          cluster=cluster, pdl=pdl, cooperative=cooperative)

    def bind(self, *args: Any, grid: Any, block: Any, cluster: Any = None, pdl: bool = False,
             cooperative: bool = False, max_ctas_per_sm: int | None = None) -> BoundLaunch:
        """The launch of these (positional) arguments with everything but their runtime values resolved
        once: specialization, compiled kernel (for the current GPU), grid, block, cluster, ``pdl``,
        ``cooperative``, ``max_ctas_per_sm`` (see ``launch``) and shared memory.
        ``bound(*args)`` then launches later arguments of the *same specialization* -- tensors of the same
        dtypes, shapes, strides and 16-byte alignment, TMA maps of the same tiling and extents, the same ints
        and Constexpr values -- reading only tensor addresses, TMA maps and floats from them. That promise
        is the caller's (``bound.matches(*args)`` checks it the slow way): a launch path that keys its bound
        launches on those properties skips tracing the specialization key on every call."""
        where: list[Any] = []
        key, leaves, _ = self._key(args, {}, where)
        spec = self._specialization(key)
        self._check_block(spec, block)
        sources = [where[i] for i in spec.used]
        if any(s is not None and s[1][0] >= len(args) for s in sources):
            raise TypeError(f"{self.__name__}.bind: pass every runtime argument positionally")
        k = self._compile(key, None)
        return BoundLaunch(self, key, k, spec, [leaves[i] for i in spec.used], sources, grid, block, cluster, pdl,
                           _launch_smem(k, spec, block, max_ctas_per_sm), cooperative)

    def _check_block(self, spec: Specialization, block: Any) -> None:
        if spec.max_threads is not None:
            b = (block,) if isinstance(block, int) else tuple(block)
            n = 1
            for d in b:
                n *= d
            if n > spec.max_threads:
                raise ValueError(f"{self.__name__}: block {block} has {n} threads, more than the kernel's "
                                 f"launch_bounds({spec.max_threads})")

    def max_active_blocks(self, *args: Any, block: Any, **kwargs: Any) -> int:
        """How many blocks of this specialization one SM of the current GPU holds at once (see
        ``tilecraft.runtime.Kernel.max_active_blocks``)."""
        key, _, _ = self._key(args, kwargs)
        spec = self._specialization(key)
        return self._compile(key, None).max_active_blocks(block, spec.smem_bytes)

    def max_active_clusters(self, *args: Any, block: Any, cluster: Any, **kwargs: Any) -> int:
        """How many clusters of this specialization fit on the current GPU at once (see
        ``tilecraft.runtime.Kernel.max_active_clusters``)."""
        key, _, _ = self._key(args, kwargs)
        spec = self._specialization(key)
        return self._compile(key, None).max_active_clusters(block, spec.smem_bytes, cluster)

    def __getitem__(self, config: tuple) -> Callable[..., None]:
        """``kernel[grid, block](*args)`` (or ``kernel[grid, block, stream]``)."""
        if not isinstance(config, tuple) or len(config) not in (2, 3):
            raise TypeError("use kernel[grid, block](*args) or kernel[grid, block, stream](*args)")
        grid, block, stream = (config + (None,))[:3]

        def launcher(*args: Any, **kwargs: Any) -> None:
            self.launch(*args, grid=grid, block=block, stream=stream, **kwargs)
        return launcher

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"launch a kernel with {self.__name__}[grid, block](...) or {self.__name__}.launch(...)")

    def __repr__(self) -> str:
        return f"<tilecraft kernel {self.__name__}{self.signature}>"


class BoundLaunch:
    """A kernel launch bound to one specialization (``Kernel.bind``): call it with the kernel's arguments
    (positional, as bound) and an optional ``stream``. Leaves the specialization fixes (extents, strides,
    ints) are packed as bound; tensor addresses, TMA maps and floats are read from the arguments."""

    __slots__ = ("owner", "key", "kernel", "grid", "block", "cluster", "pdl", "cooperative", "smem", "_template",
                 "_slots", "_values", "_launch")

    def __init__(self, owner: Kernel, key: Any, kernel: Any, spec: Specialization, values: list[Any],
                 sources: list[Any], grid: Any, block: Any, cluster: Any, pdl: bool = False, smem: int | None = None,
                 cooperative: bool = False):
        self.owner, self.key, self.kernel = owner, key, kernel
        self.grid, self.block, self.cluster, self.pdl, self.cooperative = grid, block, cluster, pdl, cooperative
        self.smem = spec.smem_bytes if smem is None else smem                # dynamic bytes; more caps the occupancy
        self._template = [v if s is None else None for v, s in zip(values, sources)]
        self._slots = tuple((i, s[0], s[1][0], s[1][1:]) for i, s in enumerate(sources) if s is not None)
        self._values = _values_function(self._template, self._slots)
        self._launch: Any = None                                          # the kernel's launcher of this config

    def values(self, args: tuple) -> list[Any]:
        """The kernel's parameter values for `args` (what the launch packs)."""
        return self._values(args)

    def matches(self, *args: Any) -> bool:
        """Whether `args` have the bound specialization and the same fixed leaves (the slow check the
        caller's key stands in for; for tests)."""
        key, leaves, _ = self.owner._key(args, {})
        if key != self.key:
            return False
        spec = self.owner._specialization(key)
        return all(t is None or t == leaves[i] for t, i in zip(self._template, spec.used))

    def __call__(self, *args: Any, stream: Any = None) -> None:
        launch = self._launch
        if launch is None:                                                # (first call: the kernel is loaded now)
            launch = self._launch = self.kernel.launcher(self.grid, self.block, self.smem, self.cluster, self.pdl,
                                                         self.cooperative)
        launch(*self._values(args), stream=stream)


def _values_function(template: list[Any], slots: tuple[tuple[Any, ...], ...]) -> Callable[[tuple], list[Any]]:
    """``values(args)`` of a BoundLaunch, generated for its slots (host time: one list copy and an assignment per
    runtime value): the template's fixed values, with tensors, floats and TMA maps read from args."""
    lines = ["def values(args):", "    vals = template.copy()"]
    for i, kind, top, sub in slots:
        v = f"args[{top}]" + "".join(f"[{j}]" for j in sub)
        lines.append(f"    vals[{i}] = " + (v if kind == "T" else f"float({v})" if kind == "F" else f"leaf({v})"))
    lines.append("    return vals")
    ns: dict[str, Any] = {"template": template, "leaf": _leaf_value}
    exec(compile("\n".join(lines), "<tilecraft bound values>", "exec"), ns)
    return ns["values"]


def _launch_smem(k: Any, spec: Specialization, block: Any, max_ctas_per_sm: int | None) -> int:
    """The dynamic shared memory of a launch: the specialization's, or more where it must cap the CTAs per SM."""
    if max_ctas_per_sm is None:
        return spec.smem_bytes
    return k.smem_for_occupancy(block, spec.smem_bytes, max_ctas_per_sm)


def _leaf_value(x: Any) -> Any:
    """What the launcher passes for a runtime leaf (a TmaMap's CUtensorMap)."""
    if type(x).__name__ == "TmaMap" and hasattr(x, "args"):
        if x.descriptor is None:
            raise ValueError("a TmaMap of a tensor that is not on a GPU can be traced and compiled, not launched")
        return x.descriptor_bytes
    return x


def kernel(fn: Callable[..., Any]) -> Kernel:
    """Decorator: make fn a kernel of the tilecraft language (see the module docstring)."""
    return Kernel(fn)


def _render(t: Trace, fn: Callable[..., Any]) -> Specialization:
    t.finish_names()
    body = t.render_body()
    # shared memory: static arrays, or one dynamic buffer past 48 KB
    total, offsets = 0, []
    for a in t.smem:
        total = -(-total // a.align) * a.align
        offsets.append(total)
        total += a.n * a.dtype.bits // 8
    dynamic = total > _STATIC_SMEM_LIMIT
    prologue: list[str] = []
    if dynamic:
        align = max(a.align for a in t.smem)
        prologue.append(f"    extern __shared__ __align__({align}) unsigned char tc_smem[];")
        for a, off in zip(t.smem, offsets):
            prologue.append(f"    {a.dtype.ctype}* {a.var.ph} = reinterpret_cast<{a.dtype.ctype}*>(tc_smem + {off});")
    else:
        for a in t.smem:
            prologue.append(f"    __shared__ __align__({a.align}) {a.dtype.ctype} {a.var.ph}[{a.n}];")
    text = "\n".join(prologue + body)
    used = [p for p in t.params if p.var.ph in text]
    for p in t.params:
        p.const_q.name = "" if p.written else "const "
    bounds = ""
    if t.max_threads:
        bounds = f"__launch_bounds__({t.max_threads}{f', {t.min_blocks}' if t.min_blocks else ''}) "
    params = ",\n    ".join(p.decl() for p in used)
    file = inspect.getsourcefile(fn) or "?"
    line = fn.__code__.co_firstlineno
    # atoms and 16-bit float types live in atoms.cuh; kernels that use none compile without it
    headers = sorted(t.includes) or (["tilecraft/atoms.cuh"] if "tc::" in text + params else [])
    include = "".join(f"#include <{h}>\n" for h in headers)
    if t.wgmma_n:                                  # wrappers of wgmma N the header lacks (sm90_codegen)
        from tilecraft.atoms.sm90_codegen import wgmma_wrappers
        include += wgmma_wrappers(sorted(t.wgmma_n))
    flags = f"// ptxas options: {' '.join(t.ptxas_options)}\n" if t.ptxas_options else ""
    src = (f"// Generated by tilecraft.dsl from {fn.__name__} ({os.path.basename(file)}:{line}).\n{flags}{include}"
           f"extern \"C\" __global__ void {bounds}{fn.__name__}(\n    {params})\n{{\n{text}\n}}\n")
    src = resolve(src)
    spec = Specialization(fn.__name__, src, tuple(p.index for p in used), total if dynamic else 0, t.max_threads,
                          t.ptxas_options)
    dump = os.environ.get("TILECRAFT_DUMP")
    if dump:
        os.makedirs(dump, exist_ok=True)
        h = hashlib.sha256(src.encode()).hexdigest()[:12]
        with open(os.path.join(dump, f"{fn.__name__}-{h}.cu"), "w") as f:
            f.write(src)
    return spec

