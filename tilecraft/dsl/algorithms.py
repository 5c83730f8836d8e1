"""CuTe's thread-level algorithms on kernel tensors: copy (vectorized), copy_if (predicated), gemm
(FMA), axpby, clear, fill. Each unrolls over the tensors' static sizes; element i of one tensor pairs
with element i of the other (index order), exactly as the C++ loops they replace."""
from __future__ import annotations

import math
from typing import Any

from tilecraft import layout as _L
from tilecraft.dsl.expr import Expr, TraceError, Value, make, render
from tilecraft.dsl.memory import PointerEngine, RegisterEngine
from tilecraft.dsl.trace import current, else_, if_
from tilecraft.layout import Layout, is_static
from tilecraft.layout.inttuple import _add
from tilecraft.tensor import Tensor

__all__ = ["copy", "copy_if", "gemm", "axpby", "clear", "fill", "vector_width"]

_VEC_TYPES = {2: "unsigned short", 4: "unsigned", 8: "uint2", 16: "uint4"}


def _size(t: Tensor, what: str) -> int:
    n = _L.size(t.layout)
    if not isinstance(n, int):
        raise TraceError(f"{what}: tensor {t!r} has the runtime size {n}; slice it to a static size first")
    return n


def _offset(t: Tensor, i: Any) -> Any:
    return _add(t.offset, t.layout(i))


def _element(t: Tensor, i: int) -> Any:
    """Element i as an expression that has not run yet (a load or register reference) where the engine
    has one, else the engine's read."""
    off = _offset(t, i)
    eng = t.engine
    if isinstance(eng, (PointerEngine, RegisterEngine)):
        return eng.load(off)
    return eng.read(off)


def _store_text(t: Tensor, i: int, value: Any, op: str = "=") -> str:
    off = _offset(t, i)
    eng = t.engine
    if isinstance(eng, RegisterEngine):
        k = eng._index(off)
        text = f"{eng.render_access(k)} {op} {render(value, eng.dtype.ctype)};"
        eng.versions[k] += 1
        return text
    if isinstance(eng, PointerEngine):
        if eng.root is not None:
            eng.root.written = True
        return f"{eng.render_access(off)} {op} {render(value, eng.dtype.ctype)};"
    raise TraceError(f"cannot write to a {eng.kind} tensor")


def _contiguous(L: Any) -> int:
    """N such that L(i) == i for i < N (1 when unknown: a dynamic or swizzled layout)."""
    if not isinstance(L, Layout):
        return 1
    c = _L.coalesce(L)
    s0, d0 = (c.shape[0], c.stride[0]) if isinstance(c.shape, tuple) else (c.shape, c.stride)
    if isinstance(s0, int) and isinstance(d0, int) and d0 == 1:
        return s0
    return 1


def _divisor(x: Any) -> int:
    if isinstance(x, Expr):
        return x.div
    return abs(x) if x else 1 << 30


def vector_width(src: Tensor, dst: Tensor) -> int:
    """The most elements one access can move for copy(src, dst): a power of two, at most 16 bytes,
    contiguous in both layouts, and aligned at every access on both sides (from the pointers' known
    alignment and the offsets' known divisors)."""
    es, ed = src.engine, dst.engine
    if not isinstance(es, (PointerEngine, RegisterEngine)) or not isinstance(ed, (PointerEngine, RegisterEngine)):
        return 1
    if es.dtype.bits != ed.dtype.bits or es.dtype.bits % 8:
        return 1
    n = _size(src, "copy")
    elem = es.dtype.bits // 8
    v = math.gcd(_contiguous(src.layout), _contiguous(dst.layout), n)
    v = min(v & -v, 16 // elem)
    while v > 1:
        ok = es.align >= v * elem and ed.align >= v * elem
        for j in range(0, n, v) if ok else ():
            if _divisor(_offset(src, j)) % v or _divisor(_offset(dst, j)) % v:
                ok = False
                break
        if ok:
            return v
        v //= 2
    return 1


def copy(src: Tensor, dst: Tensor) -> None:
    """dst(i) = src(i) for every i, with the widest vector accesses both layouts allow (up to 128 bits)."""
    n = _size(src, "copy")
    if _size(dst, "copy") != n:
        raise TraceError(f"copy: source has {n} elements, destination {_size(dst, 'copy')}")
    t = current()
    v = vector_width(src, dst)
    if v == 1:
        for i in range(n):
            t.emit(_store_text(dst, i, _element(src, i)))
        return
    vt = _VEC_TYPES[v * src.engine.dtype.bits // 8]
    for j in range(0, n, v):
        so, do = _offset(src, j), _offset(dst, j)
        if isinstance(dst.engine, RegisterEngine):
            for k in range(v):
                dst.engine.versions[dst.engine._index(do) + k] += 1
        if isinstance(dst.engine, PointerEngine) and dst.engine.root is not None:
            dst.engine.root.written = True
        if isinstance(src.engine, RegisterEngine):
            src.engine._index(so)
        t.emit(f"*reinterpret_cast<{vt}*>({dst.engine.address(do)}) = "
               f"*reinterpret_cast<const {vt}*>({src.engine.address(so)});")


def copy_if(pred: Any, src: Tensor, dst: Tensor, zfill: bool = False) -> None:
    """dst(i) = src(i) where pred(i) holds (pred: a tensor of conditions, e.g. elem_less of an identity
    tensor). With zfill, dst(i) = 0 where it does not (and src(i) is not read there)."""
    n = _size(src, "copy_if")
    if _size(dst, "copy_if") != n or _L.size(pred.layout) != n:
        raise TraceError(f"copy_if: predicate, source and destination sizes differ "
                         f"({_L.size(pred.layout)}, {n}, {_size(dst, 'copy_if')})")
    t = current()
    for i in range(n):
        p = pred(i)
        if isinstance(p, bool):
            if p:
                t.emit(_store_text(dst, i, _element(src, i)))
            elif zfill:
                t.emit(_store_text(dst, i, 0))
            continue
        if zfill:
            t.emit(_store_text(dst, i, make("?:", (p, _element(src, i), 0), dst.engine.dtype.ctype)))
        else:
            t.emit(f"if ({render(p)}) {_store_text(dst, i, _element(src, i))}")


def _operand(t: Tensor, coord: Any, hint: str) -> Any:
    """An operand value for gemm: memory is loaded into a named temporary, registers are used directly."""
    off = _add(t.offset, t.layout(coord))
    if isinstance(t.engine, RegisterEngine):
        return t.engine.load(off)
    if isinstance(t.engine, PointerEngine):
        return t.engine.read(off, hint)
    return t.engine.read(off)


def gemm(A: Tensor, B: Tensor, C: Tensor) -> None:
    """C += A * B with one FMA per element product: (M,K) x (N,K) -> (M,N), or the outer product
    (M) x (N) -> (M,N). Operands in memory are loaded once per k."""
    t = current()
    if C.rank != 2:
        raise TraceError(f"gemm: C must be rank 2 (M,N), got {C.layout}")
    M, N = _L.size(C.layout[0]), _L.size(C.layout[1])
    if A.rank == 1 and B.rank == 1:
        ks: list[Any] = [None]
    elif A.rank == 2 and B.rank == 2:
        K = _L.size(A.layout[1])
        if K != _L.size(B.layout[1]) or not isinstance(K, int):
            raise TraceError(f"gemm: A {A.layout} and B {B.layout} need the same static K")
        ks = list(range(K))
    else:
        raise TraceError(f"gemm: unsupported ranks A {A.layout}, B {B.layout}, C {C.layout}")
    if _L.size(A.layout[0]) != M or _L.size(B.layout[0]) != N or not isinstance(M * N, int):
        raise TraceError(f"gemm: shapes do not match: A {A.layout}, B {B.layout}, C {C.layout}")
    for k in ks:
        a = [_operand(A, m if k is None else (m, k), "a") for m in range(M)]
        b = [_operand(B, n if k is None else (n, k), "b") for n in range(N)]
        for n in range(N):
            for m in range(M):
                t.emit(_store_text(C, _index_of(C, m, n), a[m] * b[n], "+="))


def _index_of(C: Tensor, m: int, n: int) -> int:
    """The index (in C's index order) of coordinate (m, n)."""
    return m + n * _L.size(C.layout[0])


def axpby(alpha: Any, x: Tensor, beta: Any, y: Tensor, pred: Any = None) -> None:
    """y = alpha * x + beta * y element-wise (where pred holds, if given).

    As in BLAS, y is not read when beta is 0 (it may hold NaN): a runtime beta branches once.
    """
    n = _size(x, "axpby")
    if _size(y, "axpby") != n:
        raise TraceError(f"axpby: x has {n} elements, y {_size(y, 'axpby')}")
    t = current()

    def body(read_y: bool) -> None:
        for i in range(n):
            ax = _element(x, i)
            ax = ax if (isinstance(alpha, (int, float)) and alpha == 1) else alpha * ax
            val = ax + beta * _element(y, i) if read_y else ax
            p = True if pred is None else pred(i)
            if isinstance(p, bool):
                if p:
                    t.emit(_store_text(y, i, val))
            else:
                t.emit(f"if ({render(p)}) {_store_text(y, i, val)}")

    if isinstance(beta, (int, float)):
        body(read_y=beta != 0)
        return
    if not isinstance(beta, Value):
        raise TraceError(f"axpby: beta must be a number or a runtime value, got {beta!r}")
    with if_(make("==", (beta, 0.0), "bool")):
        body(read_y=False)
    with else_():
        body(read_y=True)


def fill(t: Tensor, value: Any) -> None:
    """Every element of t becomes value."""
    tr = current()
    for i in range(_size(t, "fill")):
        tr.emit(_store_text(t, i, value))


def clear(t: Tensor) -> None:
    """Every element of t becomes 0."""
    fill(t, 0)
