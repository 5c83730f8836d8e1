"""CuTe's thread-level algorithms on kernel tensors: copy (vectorized, or through a copy atom: cp.async,
ldmatrix, 128-bit universal copies), copy_if (predicated), gemm (FMA, or a tiled MMA's mma.sync), axpby,
clear, fill. Each unrolls over the tensors' static sizes; element i of one tensor pairs with element i of
the other (index order), exactly as the C++ loops they replace.

With an atom, the values of one instruction are the first ``atom values`` indices of mode 0 (the CPY or
MMA mode the atoms' partitions put first), so block b of a tensor is its indices b*v .. b*v+v-1. Memory
operands are passed as the address of the block's first element (``tc::smem_u32`` of it for shared
memory), register operands as ``reinterpret_cast<tc::u32*>`` of the fragment at the block: the checks
below make sure each block really is one contiguous, aligned run, else the trace fails."""
from __future__ import annotations

import math
from typing import Any

from tilecraft import layout as _L
from tilecraft.dsl.expr import Expr, TraceError, Value, make, render, var_expr, where
from tilecraft.dsl.memory import PointerEngine, RegisterEngine, convert
from tilecraft.dsl.trace import current, declare, else_, if_
from tilecraft.layout import ComposedLayout, Layout, Swizzle
from tilecraft.layout.inttuple import _add
from tilecraft.tensor import Tensor

__all__ = ["copy", "copy_if", "gemm", "axpby", "clear", "fill", "vector_width", "cp_async_commit", "cp_async_wait",
           "semaphore_wait", "semaphore_release", "flag_wait", "flag_release"]

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
    if isinstance(eng, (RegisterEngine, PointerEngine)):
        value = convert(value, eng.dtype)
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
    """N such that L(i) == i for i < N, up to the start offset (1 when unknown: a dynamic layout). A
    swizzle rewrites only the bits from its base up, so runs of 2**base elements that start aligned
    (vector_width checks each run's start) stay contiguous under it."""
    if isinstance(L, ComposedLayout) and isinstance(L.outer, Swizzle):
        low = L.outer.base - min(0, L.outer.shift)                       # lowest bit the swizzle writes
        return math.gcd(_contiguous(L.inner), 1 << low)
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


def copy(*args: Any, pred: Any = None) -> None:
    """``copy(src, dst)``: dst(i) = src(i) for every i, with the widest vector accesses both layouts allow
    (up to 128 bits). ``copy(atom, src, dst)``: the same through a copy atom (a CopyAtom, TiledCopy or
    ThrCopy; one instruction per block of the atom's values, see the module docstring), e.g. cp.async
    from a partition_S of global memory to a partition_D of shared memory, or ldmatrix from shared memory
    to a retile_D of an MMA fragment. ``pred`` (atoms with a zero-fill form only, i.e. cp.async): a
    tensor of conditions shaped like src; block b is copied where pred(b*v) holds and zero-filled where not."""
    if len(args) == 3:
        _atom_copy(*args, pred=pred)
        return
    if len(args) != 2 or pred is not None:
        raise TraceError("copy takes (src, dst) or (atom, src, dst[, pred=...]); use copy_if for predicates")
    src, dst = args
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


# ----------------------------------------------------------------------------- atoms

def _copy_atom(x: Any) -> Any:
    from tilecraft.atoms import CopyAtom, ThrCopy, TiledCopy
    if isinstance(x, ThrCopy):
        return x.tiled_copy.atom
    if isinstance(x, TiledCopy):
        return x.atom
    if isinstance(x, CopyAtom):
        return x
    raise TraceError(f"copy: expected a CopyAtom, TiledCopy or ThrCopy as the first of three arguments, got {x!r}")


def _swizzle_unit(L: Any) -> int:
    """How many consecutive offsets a (possibly swizzled) layout's outer function keeps together."""
    if isinstance(L, ComposedLayout):
        outer = L.outer
        if isinstance(outer, Swizzle):
            return min(1 << outer.base if outer.bits else 1 << 30, _swizzle_unit(L.inner))
        raise TraceError(f"atoms address only plain or swizzled layouts, got {L}")
    return 1 << 30


def _inner(L: Any) -> Any:
    return _inner(L.inner) if isinstance(L, ComposedLayout) else L


def _run_start(t: Tensor, start: int, v: int, what: str) -> Any:
    """The offset of element `start` of t, after checking elements start .. start+v-1 are the contiguous,
    v-aligned run one instruction moves (so it can be passed as one address or one register group)."""
    inner = _inner(t.layout)
    base = inner(start)
    # a run lies inside mode 0 (v divides its size), so mode 0 alone decides contiguity
    mode0 = inner[0] if isinstance(inner.shape, tuple) else inner
    n0 = _L.size(mode0)
    if not isinstance(n0, int) or n0 % v:
        raise TraceError(f"{what}: mode 0 of {t.layout} does not hold whole runs of {v} elements")
    j0 = start % n0
    for k in range(1, v):
        d = mode0(j0 + k) - mode0(j0)
        if not (isinstance(d, int) and d == k):
            raise TraceError(f"{what}: elements {start}..{start + v - 1} of {t.layout} are not one contiguous run "
                             f"(element {start + k} is {d} away from element {start}); partition with the atom's "
                             "tiled copy / MMA")
    if v > _swizzle_unit(t.layout):
        raise TraceError(f"{what}: the swizzle of {t.layout} splits runs of {v} elements")
    off = _offset(t, start)
    eng = t.engine
    if isinstance(eng, PointerEngine):
        full = _add(_add(t.offset, getattr(t.layout, "offset", 0)), base)
        vbytes = v * eng.dtype.bits // 8
        if eng.align < min(vbytes, 16) or (_divisor(full) * eng.dtype.bits // 8) % vbytes:
            raise TraceError(f"{what}: the run at element {start} of {t!r} is not known to be aligned to "
                             f"{vbytes} bytes (pointer alignment {eng.align}, offset {full}); the host must "
                             "check alignment and pass aligned leading dimensions")
    elif isinstance(eng, RegisterEngine):
        if off % v:
            raise TraceError(f"{what}: register run at {off} is not aligned to {v} elements")
    return off


def _reg_words(t: Tensor, start: int, v: int, what: str, write: bool) -> list[str]:
    """C++ lvalues of the 32-bit registers holding elements start .. start+v-1 of a fragment, in order
    (each register: 32 bits of consecutive elements, e.g. a pair of f16; the registers themselves may
    lie anywhere in the fragment)."""
    eng = t.engine
    if not isinstance(eng, RegisterEngine):
        raise TraceError(f"{what}: expected a register fragment, got {t!r}")
    per = 32 // eng.dtype.bits if eng.dtype.bits <= 32 and 32 % eng.dtype.bits == 0 else 0
    if not per or v % per:
        raise TraceError(f"{what}: {v} {eng.dtype} elements are not whole 32-bit registers")
    words = []
    for w in range(v // per):
        offs = [_offset(t, start + w * per + k) for k in range(per)]
        if any(not isinstance(o, int) for o in offs) or offs != list(range(offs[0], offs[0] + per)) \
                or offs[0] % per:
            raise TraceError(f"{what}: elements {start + w * per}.. of the fragment {t.layout} at offsets {offs} "
                             "do not form one 32-bit register")
        if write:
            for o in offs:
                eng.versions[o] += 1
        words.append(f"reinterpret_cast<tc::u32*>({eng.var.ph})[{offs[0] // per}]")
    return words


def _regs_ptr(t: Tensor, start: int, v: int, what: str) -> str:
    """A ``const tc::u32*`` to the registers of elements start .. start+v-1, which must be one
    contiguous run (an MMA operand of one instruction)."""
    words = _reg_words(t, start, v, what, write=False)
    first = int(words[0].rsplit("[", 1)[1].rstrip("]"))
    if words != [w.rsplit("[", 1)[0] + f"[{first + i}]" for i, w in enumerate(words)]:
        raise TraceError(f"{what}: the operand registers of elements {start}..{start + v - 1} of {t.layout} "
                         "are not contiguous")
    base = words[0].rsplit("[", 1)[0]
    return f"{base} + {first}" if first else base


def _smem_addr(t: Tensor, off: Any) -> str:
    return f"tc::smem_u32({t.engine.address(off)})"


def _atom_copy(atom_like: Any, src: Tensor, dst: Tensor, pred: Any = None) -> None:
    atom = _copy_atom(atom_like)
    n = _size(src, "copy")
    if _size(dst, "copy") != n:
        raise TraceError(f"copy: source has {n} elements, destination {_size(dst, 'copy')}")
    v = atom.num_val_src
    if atom.num_val_dst != v or n % v:
        raise TraceError(f"copy with {atom.name}: {n} elements are not whole instructions of {v} values")
    es, ed = src.engine, dst.engine
    if getattr(es, "dtype", None) is not None and getattr(ed, "dtype", None) is not None \
            and (es.dtype.bits != atom.val_bits or ed.dtype.bits != atom.val_bits):
        raise TraceError(f"copy with {atom.name}: the atom moves {atom.val_bits}-bit values, the tensors hold "
                         f"{es.dtype} and {ed.dtype}")
    t = current()
    cxx = atom.cxx
    what = f"copy with {atom.name}"
    if pred is not None and "cp_async" not in cxx and "copy_b" not in cxx:
        raise TraceError(f"{what}: only cp.async (zero fill) and plain copies (skipped) take a predicate")
    for b in range(n // v):
        j = b * v
        if "cp_async" in cxx:
            if not (isinstance(es, PointerEngine) and es.space == "gmem" and isinstance(ed, PointerEngine)
                    and ed.space == "smem"):
                raise TraceError(f"{what}: cp.async copies global to shared memory, got {src!r} -> {dst!r}")
            so, do = _run_start(src, j, v, what), _run_start(dst, j, v, what)
            name = cxx.removesuffix("_zfill")
            if pred is None:
                t.emit(f"{name}({_smem_addr(dst, do)}, {es.address(so)});")
                continue
            p = pred(j)
            if isinstance(p, bool):
                nbytes = v * atom.val_bits // 8 if p else 0
                t.emit(f"{name}_zfill({_smem_addr(dst, do)}, {es.address(so)}, {nbytes}u);")
            else:
                nbytes = v * atom.val_bits // 8
                t.emit(f"{name}_zfill({_smem_addr(dst, do)}, {es.address(so)}, {render(p)} ? {nbytes}u : 0u);")
        elif "ldmatrix" in cxx:
            if not (isinstance(es, PointerEngine) and es.space == "smem"):
                raise TraceError(f"{what}: ldmatrix reads shared memory, got {src!r}")
            so = _run_start(src, j, v, what)
            args = ", ".join(_reg_words(dst, j, v, what, write=True))
            t.emit(f"{cxx}({_smem_addr(src, so)}, {args});")
        elif "copy_b" in cxx:
            so, do = _run_start(src, j, v, what), _run_start(dst, j, v, what)
            if isinstance(ed, RegisterEngine):
                for k in range(v):
                    ed.versions[do + k] += 1
            if isinstance(ed, PointerEngine) and ed.root is not None:
                ed.root.written = True
            p = True if pred is None else pred(j)
            if p is False:
                continue
            guard = "" if p is True else f"if ({render(p)}) "            # a false predicate copies nothing
            t.emit(f"{guard}{cxx}({es.address(so)}, {ed.address(do)});")
        else:
            raise TraceError(f"copy: the kernel language does not issue {atom.name} ({cxx}) yet")


def cp_async_commit() -> None:
    """Close the group of cp.async copies this thread issued since the last commit
    (``cp.async.commit_group``; CuTe's cp_async_fence)."""
    current().emit("tc::cp_async_commit();")


def cp_async_wait(n: int) -> None:
    """Wait until at most n of this thread's committed cp.async groups are still in flight
    (``cp.async.wait_group n``). Other threads' copies need a barrier after this to be visible."""
    if not isinstance(n, int) or n < 0:
        raise TraceError(f"cp_async_wait needs a static count >= 0, got {n!r}")
    current().emit(f"tc::cp_async_wait<{n}>();")


def semaphore_wait(flags: Tensor, coord: Any, value: Any) -> None:
    """Block until the int flag flags(coord) equals value (thread 0 polls with acquire loads, then the
    CTA meets at a barrier): CUTLASS's Semaphore::wait, for in-order (serial) split-K."""
    _flag_op("semaphore_wait", flags, coord, value)


def semaphore_release(flags: Tensor, coord: Any, value: Any) -> None:
    """After a barrier (every thread's writes issued), thread 0 stores value to flags(coord) with release
    semantics: the next waiter sees this CTA's writes."""
    _flag_op("semaphore_release", flags, coord, value, writes=True)


def flag_wait(flags: Tensor, coord: Any, value: Any) -> None:
    """The calling thread spins until the int flag flags(coord) equals value (acquire loads at GPU scope).
    For a group smaller than the CTA: one thread waits, then the group meets at its barrier, after which
    every thread of it sees what the releasing side wrote (``semaphore_wait`` is the whole-CTA form)."""
    _flag_op("flag_wait", flags, coord, value)


def flag_release(flags: Tensor, coord: Any, value: Any) -> None:
    """The calling thread stores value to flags(coord) with release semantics at GPU scope: after its group's
    barrier, a waiter that sees value sees every write the group made before the barrier."""
    _flag_op("flag_release", flags, coord, value, writes=True)


def flag_add_release(flags: Tensor, coord: Any, value: Any) -> None:
    """The calling thread adds value to the int flag flags(coord) with release semantics at GPU scope (a
    counting ``flag_release``: many groups each add after their barrier)."""
    _flag_op("flag_add_release", flags, coord, value, writes=True)


def flag_wait_at_least(flags: Tensor, coord: Any, value: Any) -> None:
    """The calling thread spins until flags(coord) >= value (acquire loads at GPU scope), then its group meets
    at its barrier, as with ``flag_wait``."""
    _flag_op("flag_wait_at_least", flags, coord, value)


def flag_count_reset(flags: Tensor, coord: Any, total: Any) -> None:
    """The calling thread adds 1 to flags(coord); the thread whose add brings it to `total` sets it back to 0
    (for the next launch: a count every group has waited on and then added to once more)."""
    _flag_op("flag_count_reset", flags, coord, total, writes=True)


def atomic_add(flags: Tensor, coord: Any, value: Any) -> Any:
    """The calling thread adds value to the global int32 flags(coord) (relaxed, GPU scope) and gets back what it
    held, in a new variable: a work queue's ticket. Nothing waits for the answer until the variable is
    first used."""
    addr = _flag_address("atomic_add", flags, coord, writes=True)
    return declare(make("raw", (f"tc::atomic_add_relaxed({addr}, {render(value, 'int')})",), "int"), "ticket")


def arrive_last(flags: Tensor, coord: Any, total: Any) -> Any:
    """Split-K's "the last CTA finishes" (whole CTA, after its writes): the CTA counts itself in at the global int32
    flags(coord) (a barrier, then one gpu-scope acq_rel add); true in every thread of the CTA whose add brings the
    count to `total`, which also puts it back to 0 for the next launch. That CTA reads the other CTAs' writes with
    ``load_cg``."""
    addr = _flag_address("arrive_last", flags, coord, writes=True)
    return declare(make("raw", (f"tc::cta_arrive_last({addr}, {render(total, 'int')})",), "bool"), "last")


def load_cg(src: Tensor, coord: Any) -> Any:
    """src(coord) of a global fp32 tensor read at L2 (``ld.global.cg``), past this SM's L1, which does not see other
    SMs' writes: what another CTA wrote during this kernel (after ``arrive_last``), into a new variable."""
    eng = src.engine
    if not isinstance(eng, PointerEngine) or eng.space != "gmem" or eng.dtype.ctype != "float":
        raise TraceError(f"load_cg reads a global float32 tensor, got {src!r}")
    return declare(make("raw", (f"tc::ld_cg({eng.address(_add(src.offset, src.layout(coord)))})",), "float"), "v")


def _flag_op(fn: str, flags: Tensor, coord: Any, value: Any, writes: bool = False) -> None:
    """``tc::fn(&flags(coord), value)`` on a global int32 flag; one that `writes` marks the tensor written."""
    current().emit(f"tc::{fn}({_flag_address(fn, flags, coord, writes)}, {render(value, 'int')});")


def _flag_address(fn: str, flags: Tensor, coord: Any, writes: bool) -> str:
    """The address of the global int32 flag flags(coord) that `fn` works on (marking the tensor written when
    it `writes`)."""
    eng = flags.engine
    if not isinstance(eng, PointerEngine) or eng.space != "gmem" or eng.dtype.bits != 32:
        raise TraceError(f"{fn} needs a global int32 tensor, got {flags!r}")
    if writes and eng.root is not None:
        eng.root.written = True
    return eng.address(_add(flags.offset, flags.layout(coord)))


def _mma_gemm(mma: Any, A: Tensor, B: Tensor, C: Tensor) -> None:
    """C += A B through the tiled MMA's atom: A (V,M,K), B (V,N,K), C (V,M,N) fragments (CuTe's gemm
    on partition_fragment_A/B/C), one instruction per (m, n, k), n serpentine so that consecutive MMAs
    share A."""
    atom = mma.atom
    if not atom.cxx:
        raise TraceError(f"gemm: {atom.name} has no mma.sync wrapper (wgmma is issued differently)")
    if C.rank != 3 or A.rank != B.rank or A.rank not in (2, 3):
        raise TraceError(f"gemm with {atom.name}: expected fragments A (V,M[,K]), B (V,N[,K]), C (V,M,N), got "
                         f"A {A.layout}, B {B.layout}, C {C.layout}")
    va, vb, vc = (_L.size(atom.layout_a_tv[1]), _L.size(atom.layout_b_tv[1]), _L.size(atom.layout_c_tv[1]))
    M, N = _L.size(C.layout[1]), _L.size(C.layout[2])
    K = _L.size(A.layout[2]) if A.rank == 3 else 1
    KB = _L.size(B.layout[2]) if B.rank == 3 else 1
    if (_L.size(A.layout[0]), _L.size(B.layout[0]), _L.size(C.layout[0])) != (va, vb, vc) \
            or _L.size(A.layout[1]) != M or _L.size(B.layout[1]) != N or KB != K:
        raise TraceError(f"gemm with {atom.name}: fragments A {A.layout}, B {B.layout}, C {C.layout} do not "
                         f"match the atom's ({va}, {vb}, {vc}) values per thread")
    if C.engine.dtype.bits != 32:
        raise TraceError(f"gemm with {atom.name}: accumulators must be 32-bit, got {C.engine.dtype}")
    t = current()
    what = f"gemm with {atom.name}"
    for k in range(K):
        for m in range(M):
            for nn in range(N):
                n = nn if m % 2 == 0 else N - 1 - nn
                ia = va * (m + M * k)
                ib = vb * (n + N * k)
                ic = vc * (m + M * n)
                ra = _regs_ptr(A, ia, va, what)
                rb = _regs_ptr(B, ib, vb, what)
                oc = _run_start(C, ic, vc, what)
                for q in range(vc):
                    C.engine.versions[oc + q] += 1
                c = C.engine.address(oc)
                t.emit(f"{atom.cxx}({c}, {ra}, {rb}, {c});")


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


def read_if(pred: Any, src: Tensor, i: Any, other: Any = 0) -> Any:
    """src(i) where pred holds, else other; memory is read only under pred (Triton's masked load).

    ``where(pred, src(i), other)`` is not the same: src(i) reads memory where it is written, before
    the choice, so a ragged tile's predicate must guard the read itself (this, or copy_if)."""
    if isinstance(pred, bool):
        return src(i) if pred else other
    eng = src.engine
    if not isinstance(eng, PointerEngine):
        return where(pred, src(i), other)                                # registers: reading is free
    t = current()
    v = t.new_var("v")
    ctype = eng.dtype.ctype
    t.emit(f"const {ctype} {v.ph} = {render(pred)} ? {render(eng.load(_offset(src, i)))} : "
           f"{render(convert(other, eng.dtype), ctype)};")
    return var_expr(v, ctype)


def _operand(t: Tensor, coord: Any, hint: str) -> Any:
    """An operand value for gemm: memory is loaded into a named temporary, registers are used directly."""
    off = _add(t.offset, t.layout(coord))
    if isinstance(t.engine, RegisterEngine):
        return t.engine.load(off)
    if isinstance(t.engine, PointerEngine):
        return t.engine.read(off, hint)
    return t.engine.read(off)


def gemm(*args: Tensor) -> None:
    """``gemm(A, B, C)``: C += A * B with one FMA per element product: (M,K) x (N,K) -> (M,N), or the
    outer product (M) x (N) -> (M,N); operands in memory are loaded once per k. ``gemm(tiled_mma, A, B,
    C)``: the same on a tiled MMA's register fragments, one tensor-core instruction per (m, n, k) block."""
    if len(args) == 4:
        _mma_gemm(*args)
        return
    A, B, C = args
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
        # runs along the longer mode with the other operand fixed, serpentine: consecutive FMAs share an
        # operand, also across a run's end, so SASS can serve it from the reuse cache (ptxas -O1 keeps
        # this order; -O3 schedules its own)
        outer, inner = (range(N), range(M)) if M >= N else (range(M), range(N))
        for i, o in enumerate(outer):
            for j in (inner if i % 2 == 0 else reversed(inner)):
                m, n = (j, o) if M >= N else (o, j)
                t.emit(_store_text(C, _index_of(C, m, n), a[m] * b[n], "+="))


def _index_of(C: Tensor, m: int, n: int) -> int:
    """The index (in C's index order) of coordinate (m, n)."""
    return m + n * _L.size(C.layout[0])


def axpby(alpha: Any, x: Tensor, beta: Any, y: Tensor, pred: Any = None) -> None:
    """y = alpha * x + beta * y element-wise (where pred holds, if given).

    As in BLAS, y is not read when beta is 0 (it may hold NaN): a runtime beta branches once. A static
    alpha or beta of 1 multiplies nothing (``axpby(1, x, 1, y)``: y += x).
    """
    n = _size(x, "axpby")
    if _size(y, "axpby") != n:
        raise TraceError(f"axpby: x has {n} elements, y {_size(y, 'axpby')}")
    t = current()

    def unit(c: Any) -> bool:
        return isinstance(c, (int, float)) and c == 1                    # a static 1 multiplies nothing

    def body(read_y: bool) -> None:
        for i in range(n):
            ax = _element(x, i)
            ax = ax if unit(alpha) else alpha * ax
            val = ax
            if read_y:
                by = _element(y, i)
                val = ax + (by if unit(beta) else beta * by)
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
