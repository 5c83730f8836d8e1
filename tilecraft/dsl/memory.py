"""Memory in a traced kernel: element types, pointer engines (global and shared memory), register
fragments, shared-memory allocation, kernel parameters, and predicate tensors.

A kernel tensor is the ordinary :class:`~tilecraft.tensor.Tensor` (engine + layout + offset); only the
engines are new. A pointer engine's read is a load and its write a store, at the offset the layout
computes (so addresses always come from layouts). A register engine is a C array indexed only by
compile-time constants, which is what keeps it in registers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tilecraft import layout as _L
from tilecraft.dsl.expr import Expr, IntExpr, TraceError, Value, Var, _wrap, make, render, var_expr
from tilecraft.dsl.trace import Trace, current
from tilecraft.layout import is_static, is_tuple
from tilecraft.layout.inttuple import flatten
from tilecraft.tensor import Tensor
from tilecraft.layout import ArithTuple, ScaledBasis
from tilecraft.tensor.engine import CoordEngine, Engine

__all__ = ["DType", "float32", "float64", "float16", "bfloat16", "int32", "int64", "int8", "uint8", "uint32", "uint64", "bool_",
           "as_dtype", "convert",
           "PointerEngine", "RegisterEngine", "MapEngine", "Param", "smem_tensor", "make_gmem_ptr",
           "make_smem_ptr", "recast_smem", "elem_less", "make_rmem_tensor"]


@dataclass(frozen=True)
class DType:
    """An element type: its name, C++ spelling and width."""

    name: str
    ctype: str
    bits: int

    def __repr__(self) -> str:
        return self.name


float32 = DType("float32", "float", 32)
float64 = DType("float64", "double", 64)
int32 = DType("int32", "int", 32)
int64 = DType("int64", "long long", 64)
int8 = DType("int8", "signed char", 8)
uint8 = DType("uint8", "unsigned char", 8)
uint32 = DType("uint32", "unsigned", 32)
uint64 = DType("uint64", "unsigned long long", 64)
bool_ = DType("bool", "bool", 8)
# 16-bit floats are storage types of atoms.cuh (no cuda_fp16.h: it costs ~1 s of NVRTC front end per
# kernel): they move through memory, ldmatrix and mma.sync as bits, and become float for arithmetic
# (see convert), which is what a GEMM epilogue does anyway.
float16 = DType("float16", "tc::f16", 16)
bfloat16 = DType("bfloat16", "tc::bf16", 16)
_BY_NAME = {d.name: d for d in (float32, float64, float16, bfloat16, int32, int64, int8, uint8, uint32, uint64, bool_)}
_BY_NAME.update({"float": float32, "double": float64, "int": int32, "half": float16})
_HALF_CTYPES = {float16.ctype, bfloat16.ctype}


def as_dtype(x: Any) -> DType:
    """A DType from a DType, a torch or numpy dtype, a Python type (float, int, bool) or a name."""
    if isinstance(x, DType):
        return x
    if x is float:
        return float32
    if x is int:
        return int32
    if x is bool:
        return bool_
    name = str(x).replace("torch.", "").replace("<class 'numpy.", "").rstrip("'>")
    if name in _BY_NAME:
        return _BY_NAME[name]
    raise TraceError(f"unsupported element type {x!r}; the kernel language has {sorted(_BY_NAME)}")


def convert(value: Any, dtype: Any) -> Any:
    """value as an element of dtype: a 16-bit float becomes float for arithmetic, a float becomes a
    16-bit float for storage (round to nearest even, atoms.cuh's tc::to_f16 / tc::to_bf16); other
    conversions are C++'s."""
    dt = as_dtype(dtype)
    src = value.ctype if isinstance(value, Expr) else ("float" if isinstance(value, (int, float)) else "")
    if src == dt.ctype:
        return value
    if dt.ctype in _HALF_CTYPES:
        fn = "tc::to_f16" if dt is float16 else "tc::to_bf16"
        return make("call", (fn, convert(value, float32)), dt.ctype)
    if src in _HALF_CTYPES:
        return convert(make("call", ("tc::to_f32", value), "float"), dt)
    return value


# ----------------------------------------------------------------------------- parameters

@dataclass(eq=False)
class Param:
    """A kernel parameter: one runtime leaf of the Python arguments (a pointer, an int, a float).

    ``index`` is the leaf's position among all runtime leaves of the call; only parameters the kernel
    body uses appear in the C++ signature.
    """

    var: Var
    kind: str  # "ptr", "int", "float"
    ctype: str  # pointee type for pointers
    index: int
    written: bool = False
    const_q: Var = field(default_factory=lambda: Var("", False))  # "const " for read-only pointers

    def decl(self) -> str:
        if self.kind == "ptr":
            return f"{self.const_q.ph}{self.ctype}* __restrict__ {self.var.ph}"
        return f"{self.ctype} {self.var.ph}"


def _align_of(div: int, elem_bytes: int, base_align: int) -> int:
    """The alignment (bytes) of base + offset when offset is known to be a multiple of div elements."""
    off_bytes = div * elem_bytes
    return min(base_align, off_bytes & -off_bytes if off_bytes else base_align)


class PointerEngine(Engine):
    """Global or shared memory through a C++ pointer variable: reads load, writes store."""

    def __init__(self, var: Var, dtype: DType, space: str, align: int, root: Param | None):
        self.var, self.dtype, self.space, self.align, self.root = var, dtype, space, align, root
        self.kind = f"{space}_ptr"

    def __len__(self) -> int:  # a pointer has no bound the tracer knows
        return 1 << 62

    def bits(self) -> int:
        return self.dtype.bits

    def describe(self) -> str:
        return f"{self.space}_ptr[{self.dtype.bits}b]({self.var.name})"

    def render_access(self, offset: Any) -> str:
        return f"{self.var.ph}[{render(offset, 'int')}]"

    def address(self, offset: Any) -> str:
        if _is_zero(offset):
            return self.var.ph
        return f"{self.var.ph} + {_wrap(offset, 4, 'int')}"  # parenthesized below + (e.g. a swizzle's ^)

    def load(self, offset: Any) -> Value:
        """The load expression (not yet a statement: the caller decides when it runs)."""
        _check_int_offset(offset)
        return make("load", (self, offset), self.dtype.ctype)

    def read(self, offset: Any, hint: str = "v") -> Any:
        t = current()
        v = t.new_var(hint)
        e = self.load(offset)
        t.emit(f"const {self.dtype.ctype} {v.ph} = {render(e)};")
        return var_expr(v, self.dtype.ctype)

    def write(self, offset: Any, value: Any) -> None:
        _check_int_offset(offset)
        if self.root is not None:
            self.root.written = True
        current().emit(f"{self.render_access(offset)} = {render(convert(value, self.dtype), self.dtype.ctype)};")

    def new(self, n: int) -> "RegisterEngine":
        return RegisterEngine(n, self.dtype)

    def recast(self, new_dtype: Any, offset: Any = 0) -> tuple["PointerEngine", int]:
        """(engine, offset): the same memory from element `offset` on, as elements of `new_dtype` (CuTe's
        recast_ptr): a new pointer variable at that element, offset 0."""
        dt = as_dtype(new_dtype)
        t = current()
        v = t.new_var(f"{self.space}_{dt.ctype.split()[-1]}")
        t.emit(f"{dt.ctype}* {v.ph} = reinterpret_cast<{dt.ctype}*>({self.address(offset)});")
        align = _align_of(offset.div if isinstance(offset, Expr) else (abs(offset) or 1 << 30), self.dtype.bits // 8,
                          self.align)
        return PointerEngine(v, dt, self.space, align, self.root), 0

    def rebased(self, var: Var, offset: Any) -> "PointerEngine":
        """The engine of pointer variable var = this pointer + offset."""
        div = offset.div if isinstance(offset, Expr) else (abs(offset) or 1 << 30)
        return PointerEngine(var, self.dtype, self.space, _align_of(div, self.dtype.bits // 8, self.align), self.root)


def _is_zero(x: Any) -> bool:
    return isinstance(x, int) and x == 0


def _check_int_offset(offset: Any) -> None:
    if not (isinstance(offset, (int, IntExpr)) and not isinstance(offset, bool)):
        raise TraceError(f"memory offset {offset!r} is not an integer (a coordinate tensor cannot be loaded)")


class RegisterEngine(Engine):
    """A register fragment: ``T name[n];`` indexed only by compile-time constants.

    A read is the expression ``name[i]`` (no statement); using it after ``name[i]`` was overwritten
    raises, since C++ would see the new value (bind it to a local first to keep the old one).
    """

    kind = "rmem"

    def __init__(self, n: int, dtype: DType):
        if not isinstance(n, int):
            raise TraceError(f"a register fragment needs a static size, got {n!r}: partition with static layouts")
        t = current()
        self.n, self.dtype = n, dtype
        self.var = t.new_var("frag")
        self.versions = [0] * n
        nbytes = n * dtype.bits // 8
        # aligned like the widest vector access that fits (so copies may use it), at most 16 bytes
        self.align = min(16, nbytes & -nbytes) if nbytes else 1
        align = f"alignas({self.align}) " if self.align > dtype.bits // 8 else ""
        self.decl = t.emit(f"{align}{dtype.ctype} {self.var.ph}[{n}];")

    def __len__(self) -> int:
        return self.n

    def bits(self) -> int:
        return self.dtype.bits

    def describe(self) -> str:
        return f"rmem[{self.dtype.bits}b]({self.var.name})"

    def _index(self, offset: Any) -> int:
        if not isinstance(offset, int):
            raise TraceError(
                f"register fragment {self.var.name} indexed by the runtime value `{offset}`: registers need "
                "compile-time indices (loop with Python's range, which unrolls, or use shared memory)")
        if not 0 <= offset < self.n:
            raise TraceError(f"index {offset} is outside the register fragment {self.var.name}[{self.n}]")
        return offset

    def load(self, offset: Any) -> Value:
        i = self._index(offset)
        return make("ref", (self, i, self.versions[i]), self.dtype.ctype)

    read = load

    def render_access(self, i: int, version: int | None = None) -> str:
        if version is not None and version != self.versions[i]:
            raise TraceError(f"a read of {self.var.name}[{i}] is used after {self.var.name}[{i}] was overwritten; "
                             "assign the read to a local variable before writing the fragment")
        return f"{self.var.ph}[{i}]"

    def address(self, offset: int) -> str:
        return f"{self.var.ph} + {offset}" if offset else self.var.ph

    def write(self, offset: Any, value: Any) -> None:
        i = self._index(offset)
        text = f"{self.var.ph}[{i}] = {render(convert(value, self.dtype), self.dtype.ctype)};"
        self.versions[i] += 1
        current().emit(text)

    def new(self, n: int) -> "RegisterEngine":
        return RegisterEngine(n, self.dtype)

    def retype(self, dtype: Any, n: int) -> "RegisterEngine":
        """A fragment of n elements of dtype replacing this fresh one (make_fragment_like(x, dtype))."""
        self.decl.text = ""
        return RegisterEngine(n, as_dtype(dtype))


class MapEngine(Engine):
    """Elements computed from another engine's: read(o) is fn(inner.read(o)) (e.g. predicates from coordinates)."""

    kind = "map"

    def __init__(self, inner: Engine, fn: Any, what: str):
        self.inner, self.fn, self.what = inner, fn, what
        self.dtype = "bool"

    def __len__(self) -> int:
        return len(self.inner)

    def read(self, offset: Any) -> Any:
        return self.fn(self.inner.read(offset))

    def describe(self) -> str:
        return f"{self.what}({self.inner.describe()})"


# ----------------------------------------------------------------------------- allocation

@dataclass(eq=False)
class SmemAlloc:
    var: Var
    dtype: DType
    n: int
    align: int


def smem_tensor(dtype: Any, layout: Any, align: int = 128) -> Tensor:
    """A shared-memory tensor with a static layout (plain or swizzled), aligned to `align` bytes.

    Allocations are static ``__shared__`` arrays; when the kernel's total exceeds 48 KB they move to
    dynamic shared memory (one ``extern __shared__`` buffer, carved in allocation order) and the launch
    passes the size.
    """
    t = current()
    dt = as_dtype(dtype)
    if not _L.is_layout(layout):
        layout = _L.make_layout(layout)
    inner = getattr(layout, "inner", layout)
    if not (is_static(inner.shape) and is_static(inner.stride)):
        raise TraceError(f"shared memory needs a static layout, got {layout}")
    n = _L.cosize(layout)
    v = t.new_var("smem")
    t.smem.append(SmemAlloc(v, dt, n, align))
    return Tensor(PointerEngine(v, dt, "smem", align, None), layout)


def make_rmem_tensor(dtype: Any, layout: Any) -> Tensor:
    """A register fragment with a static layout (``float frag[cosize];``)."""
    if not _L.is_layout(layout):
        layout = _L.make_layout(layout)
    return Tensor(RegisterEngine(_L.cosize(layout), as_dtype(dtype)), layout)


def make_gmem_ptr(x: Any) -> PointerEngine:
    """The global-memory pointer of a kernel tensor argument (CuTe's make_gmem_ptr(A))."""
    eng = x.engine if isinstance(x, Tensor) else x
    if not isinstance(eng, PointerEngine) or eng.space != "gmem":
        raise TraceError(f"make_gmem_ptr needs a global-memory tensor argument of the kernel, got {x!r}")
    return eng


def make_smem_ptr(x: Any) -> PointerEngine:
    """The shared-memory pointer of a smem tensor."""
    eng = x.engine if isinstance(x, Tensor) else x
    if not isinstance(eng, PointerEngine) or eng.space != "smem":
        raise TraceError(f"make_smem_ptr needs a shared-memory tensor, got {x!r}")
    return eng


def recast_smem(x: Tensor, offset: int, dtype: Any, layout: Any) -> Tensor:
    """The shared memory of x from its element `offset` on, as elements of dtype in `layout` (CuTe's
    make_tensor(recast_ptr<T>(x.data() + offset), layout)): a new pointer into the same buffer, for a buffer whose
    use has ended (the caller orders the two uses with a barrier). The view must lie inside x."""
    eng, dt = make_smem_ptr(x), as_dtype(dtype)
    if (offset * eng.dtype.bits) % 128:
        raise TraceError(f"recast_smem: element {offset} of {eng.dtype} is not 16-byte aligned")
    if not _L.is_layout(layout):
        layout = _L.make_layout(layout)
    have, need = _L.cosize(x.layout) * eng.dtype.bits - offset * eng.dtype.bits, _L.cosize(layout) * dt.bits
    if need > have:
        raise TraceError(f"recast_smem: {layout} of {dt} takes {need // 8} bytes, {x.layout} of {eng.dtype} from "
                         f"element {offset} on holds {max(have, 0) // 8}")
    t = current()
    v = t.new_var("smem")
    t.emit(f"{dt.ctype}* {v.ph} = reinterpret_cast<{dt.ctype}*>({eng.address(x.offset + offset)});")
    nbytes = offset * eng.dtype.bits // 8
    align = min(eng.align, nbytes & -nbytes) if nbytes else eng.align
    return Tensor(PointerEngine(v, dt, "smem", align, None), layout)


def elem_less(a: Any, b: Any) -> Any:
    """CuTe's elem_less: every leaf of coordinate a is below the corresponding leaf of b (a condition).

    On a tensor of coordinates (a partitioned identity tensor) it is the tensor of those conditions,
    the predicate of a ragged tile: ``copy_if(elem_less(tAcA, shape(mA)), tAgA, tAsA)``.
    """
    if isinstance(a, Tensor):
        return Tensor(MapEngine(a.engine, lambda c: elem_less(c, b), "elem_less"), a.layout, a.offset)
    fa, fb = flatten(a), flatten(b)
    fa = fa if is_tuple(fa) else (fa,)
    fb = fb if is_tuple(fb) else (fb,)
    if len(fb) < len(fa):
        raise TraceError(f"elem_less: {a} has more modes than {b}")
    out: Any = True
    for x, y in zip(fa, fb):
        c = x < y
        out = out & c if not isinstance(out, bool) else (c if out else False)
    return out


# ----------------------------------------------------------------------------- naming locals

def _bind_expr(t: Trace, name: str, val: Expr) -> None:
    """Declare `const T name = val;` and print val as `name` until the enclosing block closes."""
    v = t.new_var(name, temp=False)
    t.emit(f"const {val.ctype} {v.ph} = {render(val, val.ctype)};")
    val.bound = v

    def unbind() -> None:
        val.bound = None
    t.on_block_exit(unbind)


def bind_local(t: Trace, name: str, val: Any) -> bool:
    """Give a kernel local's runtime value the local's name (see trace's module docstring).
    Returns True when val needs no further attention."""
    if isinstance(val, Expr):
        if val.op == "var":
            v = val.args[0]
            if v.temp or v.soft:
                t.rename(v, name)
            return True
        if val.bound is None and val.op != "raw":
            _bind_expr(t, name, val)
        return True
    if isinstance(val, Tensor):
        eng = val.engine
        if isinstance(eng, RegisterEngine):
            if eng.var.temp:
                t.claim(eng.var, name)
            return True
        if isinstance(eng, CoordEngine):
            off = val.offset
            leaves = flatten(ArithTuple.of(off).value if isinstance(off, ScaledBasis) else getattr(off, "value", off))
            for i, c in enumerate(leaves if is_tuple(leaves) else (leaves,)):
                if isinstance(c, IntExpr) and c.op != "var" and c.bound is None:
                    _bind_expr(t, f"{name}_{i}", c)
            return True
        if isinstance(eng, PointerEngine):
            if eng.var.temp:
                t.claim(eng.var, name)
            if isinstance(val.offset, IntExpr):
                v = t.new_var(name, temp=False)
                q = eng.root.const_q.ph if eng.root is not None else ""
                t.emit(f"{q}{eng.dtype.ctype}* {v.ph} = {eng.address(val.offset)};")
                old = (val.engine, val.offset)
                val.engine, val.offset = eng.rebased(v, val.offset), 0

                def restore() -> None:
                    val.engine, val.offset = old
                t.on_block_exit(restore)
            return True
        return True
    return False
