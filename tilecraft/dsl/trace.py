"""The trace: statements appended to the current block while a kernel's Python body runs, and the
control flow that opens blocks (``tc.range``, ``tc.if_``/``tc.else_``).

Statements are rendered to C++ text as they are emitted (so they see memory exactly as it is at that
point of the program); variable names stay placeholders until the end, because a temporary takes the
name of the Python local it is assigned to. That naming is done by watching the kernel function's frame
(``sys.settrace`` on that frame only): at every new line the tracer looks at the kernel's locals and

- renames a fresh temporary (a load, a loop index, a fragment, a shared array) after the local holding it;
- declares a local integer expression as ``const int name = ...;`` and uses the name from then on;
- declares a local pointer tensor whose offset is an expression as ``T* name = base + offset;`` and
  re-bases the tensor on it, so its accesses read ``name[i]``.

Each statement remembers the Python line it came from; the rendered C++ carries that line's trailing
comment (the shape comments of the seed kernels) or, for a line that produced several statements, the
line itself as a heading comment.
"""
from __future__ import annotations

import keyword
import linecache
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from tilecraft.dsl.expr import BoolExpr, Expr, IntExpr, TraceError, Var, _div_of, make, render, user_line, var_expr

__all__ = ["Trace", "current", "range", "if_", "else_", "syncthreads", "syncwarp", "launch_bounds", "ptxas_options", "compiler_barrier", "threadIdx", "blockIdx",
           "blockDim", "gridDim", "emit", "declare", "assume", "smid", "globaltimer", "shfl_xor"]

_CPP_RESERVED = set(keyword.kwlist) | {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "int", "long", "register", "return", "short", "signed", "sizeof", "static",
    "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool", "true", "false",
    "new", "delete", "this", "template", "typename", "namespace", "using", "class", "private", "public",
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "min", "max", "abs", "half", "tc",
}


@dataclass
class Stmt:
    """One C++ statement (or a compound one with nested blocks). ``text`` may hold variable placeholders."""

    text: str
    src: tuple[str, int] | None = None  # (file, line) of the Python line that emitted it
    blocks: list["Block"] = field(default_factory=list)  # for `for`/`if`: the bodies
    headers: list[str] = field(default_factory=list)  # text opening each body ("for (...)", "else")


@dataclass
class Block:
    stmts: list[Stmt] = field(default_factory=list)


_current: "Trace | None" = None


def current() -> "Trace":
    """The trace being recorded; raises TraceError outside a @tc.kernel body."""
    if _current is None:
        raise TraceError("this operation only works inside a @tc.kernel function while it is traced "
                         "(call the kernel, or kernel.source(...), to trace it)")
    return _current


def tracing() -> bool:
    """True while a kernel body is being traced."""
    return _current is not None


class Trace:
    """Everything recorded while tracing one specialization of a kernel."""

    def __init__(self, name: str, code: Any):
        self.name = name
        self.code = code  # the kernel function's code object: its frame is the one we watch
        self.root = Block()
        self.stack: list[Block] = [self.root]
        self.names: set[str] = set()
        self.vars: list[Var] = []
        self.params: list[Any] = []  # memory.Param, in signature order
        self.smem: list[Any] = []  # memory.SmemAlloc
        self.max_threads: int | None = None
        self.min_blocks: int | None = None
        self.ptxas_options: tuple[str, ...] = ()  # extra ptxas flags of this specialization (ptxas_options)
        self.line: tuple[str, int] | None = None
        self.seen: dict[int, Any] = {}  # id(local value) -> value, for locals already handled
        self.scoped: list[list[Callable[[], None]]] = [[]]  # undo actions per open block
        self.last_closed_if: Stmt | None = None
        self.special: dict[str, IntExpr] = {}  # threadIdx.x etc., one leaf each
        self.includes: set[str] = set()  # headers beyond atoms.cuh (e.g. tilecraft/sm90.cuh)
        self.wgmma_n: set[int] = set()  # wgmma N whose wrappers the source defines itself (not in sm90_wgmma.cuh)
        self.loops = 0  # tc.range loops open (break_ needs one)

    # -- names
    def new_var(self, hint: str, temp: bool = True) -> Var:
        v = Var(hint, temp)
        self.vars.append(v)
        if not temp:
            self.claim(v, hint)
        return v

    def claim(self, v: Var, name: str) -> None:
        """Give v the C++ name `name` (made unique and legal)."""
        base = re.sub(r"\W", "_", name) or "v"
        if base[0].isdigit():
            base = "v" + base
        if base in _CPP_RESERVED:
            base += "_"
        cand, i = base, 1
        while cand in self.names:
            cand = f"{base}_{i}"
            i += 1
        self.names.add(cand)
        v.name, v.temp = cand, False

    def rename(self, v: Var, name: str) -> None:
        """Replace a temporary or made-up name with a kernel local's name."""
        if v.soft:
            self.names.discard(v.name)
            v.soft = False
        self.claim(v, name)

    def finish_names(self) -> None:
        counters: dict[str, int] = {}
        for v in self.vars:
            if v.temp:
                n = counters.get(v.name, 0)
                while f"{v.name}{n}" in self.names:
                    n += 1
                counters[v.name] = n + 1
                self.claim(v, f"{v.name}{n}")

    # -- statements
    def emit(self, text: str) -> Stmt:
        s = Stmt(text, self._src())
        self.stack[-1].stmts.append(s)
        self.last_closed_if = None
        return s

    def _src(self) -> tuple[str, int] | None:
        if self.line is not None:
            return self.line
        file, line, _ = user_line()
        return (file, line)

    def open(self, stmt: Stmt, header: str) -> Block:
        b = Block()
        stmt.blocks.append(b)
        stmt.headers.append(header)
        self.stack.append(b)
        self.scoped.append([])
        return b

    def close(self, frame: Any = None) -> None:
        if frame is not None:
            self.bind_locals(frame)
        for undo in reversed(self.scoped.pop()):
            undo()
        self.stack.pop()

    def on_block_exit(self, undo: Callable[[], None]) -> None:
        """Run undo when the innermost open block closes (a name declared inside it goes out of scope)."""
        self.scoped[-1].append(undo)

    # -- watching the kernel frame
    def run(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        global _current
        prev_trace, prev_current = sys.gettrace(), _current
        code = self.code

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                self.bind_locals(frame)
                self.line = (frame.f_code.co_filename, frame.f_lineno)
            elif event == "return":
                self.bind_locals(frame)
                self.line = None
            return local

        def global_(frame: Any, event: str, arg: Any) -> Any:
            if frame.f_code is code or frame.f_code in _INLINE:
                return local
            return None

        _current = self
        sys.settrace(global_)
        try:
            return fn(*args, **kwargs)
        finally:
            sys.settrace(prev_trace)
            _current = prev_current

    def bind_locals(self, frame: Any) -> None:
        if frame is None or frame.f_code is not self.code and frame.f_code not in _INLINE:
            return
        from tilecraft.dsl.memory import bind_local
        for name, val in frame.f_locals.items():
            if isinstance(val, (int, float, str, tuple, list, dict, type(None))):
                continue
            key = id(val)
            if self.seen.get(key) is val:
                continue
            if bind_local(self, name, val):
                self.seen[key] = val

    # -- rendering
    def render_body(self, indent: str = "    ") -> list[str]:
        out: list[str] = []
        self._render_block(self.root, indent, out)
        return out

    def _render_block(self, block: Block, indent: str, out: list[str]) -> None:
        stmts = [s for s in block.stmts if s.text or s.blocks]
        i = 0
        while i < len(stmts):
            j = i + 1
            if not stmts[i].blocks:
                while j < len(stmts) and stmts[j].src == stmts[i].src and not stmts[j].blocks:
                    j += 1
            group = stmts[i:j]
            code, comment = _source_parts(group[0].src)
            if group[0].blocks:
                if comment:
                    out.append(f"{indent}// {comment}")
                self._render_compound(group[0], indent, out)
            elif len(group) == 1:
                out.append(indent + group[0].text + (f"  // {comment}" if comment else ""))
            else:
                if code:
                    out.append(f"{indent}// {code}" + (f"  ({comment})" if comment else ""))
                out.extend(indent + s.text for s in group)
            i = j

    def _render_compound(self, s: Stmt, indent: str, out: list[str]) -> None:
        if s.text:
            out.append(indent + s.text)
        for k, (header, body) in enumerate(zip(s.headers, s.blocks)):
            out.append(indent + ("} " if k else "") + header + " {")
            self._render_block(body, indent + "    ", out)
        out.append(indent + "}")


def _source_parts(src: tuple[str, int] | None) -> tuple[str, str]:
    """(code, trailing comment) of a Python source line."""
    if src is None:
        return "", ""
    text = linecache.getline(src[0], src[1]).strip()
    code, comment = text, ""
    if "#" in text:
        # a '#' inside a string literal is rare in kernels; split at the last ' #' that follows code
        idx = text.find("  #")
        idx = idx if idx >= 0 else (0 if text.startswith("#") else text.find(" #"))
        if idx >= 0:
            code, comment = text[:idx].rstrip(), text[idx:].strip().lstrip("#").strip()
    return code, comment


# ----------------------------------------------------------------------------- special registers

class _Dim3:
    """CUDA's threadIdx / blockIdx / blockDim / gridDim: ``.x``, ``.y``, ``.z`` are runtime ints."""

    def __init__(self, name: str):
        self._name = name

    def _get(self, axis: str) -> IntExpr:
        t = current()
        mag = None
        if self._name == "threadIdx" and t.max_threads is not None:
            mag = t.max_threads
        if self._name == "blockDim" and t.max_threads is not None:
            mag = t.max_threads + 1
        key = f"{self._name}.{axis}"
        e = t.special.get(key)
        if e is None:
            v = Var(f"int({key})")
            t.vars.append(v)
            e = t.special[key] = var_expr(v, "int", mag)
        return e

    @property
    def x(self) -> IntExpr:
        return self._get("x")

    @property
    def y(self) -> IntExpr:
        return self._get("y")

    @property
    def z(self) -> IntExpr:
        return self._get("z")

    def __repr__(self) -> str:
        return self._name


threadIdx = _Dim3("threadIdx")
blockIdx = _Dim3("blockIdx")
blockDim = _Dim3("blockDim")
gridDim = _Dim3("gridDim")


#: code objects of @inline helpers: traced like the kernel's own body
_INLINE: set[Any] = set()


def inline(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for a helper a kernel calls while tracing: its locals are watched like the kernel's own
    (a local holding a runtime value becomes a named C++ variable, evaluated once where it is assigned)
    and its source lines annotate the code it emits. Without it a helper's intermediate values are
    expressions, re-rendered at every use."""
    _INLINE.add(fn.__code__)
    return fn


def launch_bounds(max_threads: int, min_blocks: int | None = None) -> None:
    """Declare the most threads a block of this kernel has (C++ ``__launch_bounds__``); call it before
    reading threadIdx. ptxas then budgets registers for that many threads, threadIdx.x is known to be
    below it (``threadIdx.x / 32 % 8`` folds to ``threadIdx.x / 32`` for 256 threads), and launching with
    a larger block raises. ``min_blocks`` asks ptxas to fit that many blocks on one SM (it caps the
    registers per thread at 65536 / (max_threads * min_blocks), rounded down to its allocation unit)."""
    if not isinstance(max_threads, int) or not 0 < max_threads <= 1024:
        raise TraceError(f"launch_bounds needs a static thread count in 1..1024, got {max_threads!r}")
    if min_blocks is not None and (not isinstance(min_blocks, int) or min_blocks < 1):
        raise TraceError(f"launch_bounds needs a static positive min_blocks, got {min_blocks!r}")
    t = current()
    t.max_threads, t.min_blocks = max_threads, min_blocks


#: ptxas flags a kernel may ask for: optimization level and register-allocation effort. Flags that change
#: what the cubin is (arch, register caps, debug info) stay with the runtime's compile options.
_PTXAS_FLAGS = re.compile(r"-O[0-3]|--allow-expensive-optimizations=(true|false)|--register-usage-level=([0-9]|10)")


def ptxas_options(*options: str) -> None:
    """Compile this specialization with these extra ptxas flags (``-O0`` .. ``-O3``,
    ``--allow-expensive-optimizations=true|false``, ``--register-usage-level=0..10``); the generated source
    names them in a comment. ``-O1`` keeps straight-line runs of FFMAs in their order and
    allocates registers with the bank of each operand in view: the tuned SGEMM's 8x16 thread tiles read
    two source registers of one bank in 1-3% of their FFMAs against 28-40% at ptxas's default ``-O3``."""
    for o in options:
        if not isinstance(o, str) or not _PTXAS_FLAGS.fullmatch(o):
            raise TraceError(f"ptxas_options: {o!r} is not one of -O0..-O3, --allow-expensive-optimizations=true|false, "
                             "--register-usage-level=0..10")
    t = current()
    t.ptxas_options = tuple(options)


# ----------------------------------------------------------------------------- statements

def emit(text: str) -> None:
    """Append a raw C++ statement (an escape hatch; prefer the language's operations)."""
    current().emit(text)


def break_() -> None:
    """``break;``: leave the innermost ``tc.range`` loop, e.g. under ``tc.if_`` where a loop of unknown trip
    count (a work queue's) finds its end."""
    t = current()
    if not t.loops:
        raise TraceError("break_() outside a tc.range loop")
    t.emit("break;")


def syncthreads() -> None:
    """``__syncthreads()``: wait until every thread of the block reaches this point and its smem writes are visible."""
    current().emit("__syncthreads();")


def compiler_barrier() -> None:
    """``asm volatile("" ::: "memory");``: no instruction, but the compiler keeps every memory access on its
    side of this point. ptxas at -O1 issues instructions in the PTX's order, so there it also fixes where
    loads issue: e.g. a k-step's fragment loads stay ahead of the previous step's FMAs instead of being
    sunk next to their first use (-O3 ptxas schedules across it)."""
    current().emit('asm volatile("" ::: "memory");')


def syncwarp() -> None:
    """``__syncwarp()``: the warp's threads meet here, and their shared-memory writes before it are
    visible to each other after it."""
    current().emit("__syncwarp();")


def shfl_xor(value: Any, lane_mask: int) -> Any:
    """``__shfl_xor_sync(0xffffffff, value, lane_mask)``: value as lane (this lane XOR lane_mask) of the warp holds
    it, read into a new variable. Every lane of the warp must execute it (a butterfly reduction's step: after
    ``x = x + shfl_xor(x, m)`` for m = 16, 8, 4, 2, 1 every lane holds the warp's sum). value: a float, int or
    unsigned expression; lane_mask: an int in 1..31."""
    if isinstance(lane_mask, bool) or not isinstance(lane_mask, int) or not 0 < lane_mask < 32:
        raise TraceError(f"shfl_xor needs a lane mask in 1..31, got {lane_mask!r}")
    ctype = value.ctype if isinstance(value, Expr) else ("float" if isinstance(value, float) else "int")
    if ctype not in ("float", "int", "unsigned"):
        raise TraceError(f"shfl_xor moves a float, int or unsigned, got {ctype} ({value!r})")
    return declare(make("raw", (f"__shfl_xor_sync(0xffffffffu, {render(value, ctype)}, {lane_mask})",), ctype),
                   "shfl")


def smid() -> Any:
    """The SM this thread runs on (PTX ``%smid``), read here into a variable: for placement studies and
    timelines (``globaltimer``); the numbering need not be contiguous, and a CTA keeps its SM."""
    return declare(make("raw", ("tc::smid()",), "unsigned"), "sm")


def globaltimer() -> Any:
    """The GPU's global nanosecond timer (PTX ``%globaltimer``), read at this point of the thread's program
    into a variable (``unsigned long long``): comparable across SMs and kernels, for timelines; its
    resolution is the driver's (about 1 us on some GPUs, 32 ns on recent ones)."""
    return declare(make("raw", ("tc::globaltimer()",), "unsigned long long"), "ns")


def declare(value: Any, hint: str = "t", const: bool = True, div: int = 1) -> Any:
    """Hold value in a new C++ variable and return the variable (an expression of the same type).

    ``const=False`` declares a mutable variable (a Python int starts an ``int``) that ``assign`` updates,
    e.g. a counter a runtime loop carries from one iteration to the next. Its later values are unknown
    here, so it promises only ``div``: every value assigned must be a known multiple of it (what lets a
    running offset keep a vector copy's alignment)."""
    t = current()
    if not const and _div_of(value) % div:
        raise TraceError(f"declare: {value!r} is not known to be a multiple of div={div}")
    if not isinstance(value, Expr):
        if const:
            return value
        if not isinstance(value, int) or isinstance(value, bool):
            raise TraceError(f"a mutable variable starts from an int or a runtime value, got {value!r}")
        v = t.new_var(hint)
        t.emit(f"int {v.ph} = {render(value, 'int')};")
        return var_expr(v, "int", None, div)
    v = t.new_var(hint)
    t.emit(f"{'const ' if const else ''}{value.ctype} {v.ph} = {render(value, value.ctype)};")
    if const:
        return var_expr(v, value.ctype, getattr(value, "mag", None), getattr(value, "div", 1))
    return var_expr(v, value.ctype, None, div)


def assign(target: Any, value: Any) -> None:
    """``target = value;`` for a variable from ``declare(..., const=False)``. Expressions that read target
    and are rendered later see the new value (as in C++): bind what must keep the old one to a local."""
    if not isinstance(target, Expr) or target.op != "var":
        raise TraceError(f"assign needs a variable from declare(..., const=False), got {target!r}")
    if _div_of(value) % target.div:
        raise TraceError(f"assign: {value!r} is not known to be a multiple of {target!r}'s div={target.div}")
    current().emit(f"{render(target)} = {render(value, target.ctype)};")


def assume(cond: bool, message: str) -> None:
    """A static precondition (CUTE_STATIC_ASSERT_V): raises TraceError with message when cond is false."""
    if isinstance(cond, Expr):
        raise TraceError(f"assume() needs a static condition; `{cond}` is only known at runtime")
    if not cond:
        file, line, text = user_line()
        raise TraceError(f"{file}:{line}: {message}\n    {line} | {text}")


class range:  # noqa: A001 - the kernel language's loop, named like Python's
    """``for i in tc.range(n)`` / ``tc.range(start, stop, step)``: a C++ ``for`` loop (the body is traced once).

    A runtime step (e.g. ``gridDim.x``, a persistent kernel's stride over tiles) must be positive.

    ``unroll``: None lets the compiler decide, an int n emits ``#pragma unroll n`` (1 keeps the loop
    rolled), True emits ``#pragma unroll``. Python's own ``range`` unrolls at trace time instead.
    """

    def __init__(self, start: Any, stop: Any = None, step: Any = 1, *, unroll: int | bool | None = None):
        if stop is None:
            start, stop = 0, start
        if isinstance(step, int) and step <= 0:
            raise TraceError("tc.range needs a positive step")
        if isinstance(step, Expr) and not isinstance(step, IntExpr):
            raise TraceError(f"tc.range needs an integer step, got {step!r}")
        self.start, self.stop, self.step, self.unroll = start, stop, step, unroll

    def __iter__(self) -> Iterator[IntExpr]:
        t = current()
        frame = sys._getframe(1)
        v = t.new_var("i")
        mag = None
        if isinstance(self.stop, int) and isinstance(self.start, int):
            mag = max(abs(self.start), abs(self.stop)) + 1
        elif isinstance(self.stop, IntExpr) and isinstance(self.start, int) and self.stop.mag is not None:
            mag = max(abs(self.start) + 1, self.stop.mag)
        i = var_expr(v, "int", mag)
        if self.unroll is None:
            pragma = ""
        elif isinstance(self.unroll, bool):
            pragma = "#pragma unroll" if self.unroll else "#pragma unroll 1"
        else:
            pragma = f"#pragma unroll {self.unroll}"
        step = "++" + v.ph if isinstance(self.step, int) and self.step == 1 else f"{v.ph} += {render(self.step)}"
        s = t.emit(pragma)
        t.open(s, f"for (int {v.ph} = {render(self.start)}; {v.ph} < {render(self.stop)}; {step})")
        depth = len(t.stack)
        t.loops += 1
        yield i
        t.loops -= 1
        if len(t.stack) != depth:
            raise TraceError("a runtime block opened inside this tc.range body was not closed")
        t.close(frame)
        t.last_closed_if = None


class if_:
    """``with tc.if_(cond):`` — the body runs only where the runtime condition holds (a C++ ``if``).

    A Python bool is refused: ``x == 0`` on a runtime value compares expressions in Python (False),
    so it is almost always a mistaken ``tc.eq(x, 0)``; a static condition is a Python ``if``.
    """

    def __init__(self, cond: Any):
        if isinstance(cond, bool):
            raise TraceError(f"tc.if_ got the Python bool {cond}: `==` and `!=` on runtime values compare "
                             "expressions in Python; use tc.eq(a, b) / tc.ne(a, b) for a runtime comparison, "
                             "or a Python `if` for a static condition")
        if not isinstance(cond, BoolExpr):
            raise TraceError(f"tc.if_ needs a condition (a comparison of runtime values), got {cond!r}")
        self.cond = cond

    def __enter__(self) -> None:
        t = current()
        self.frame = sys._getframe(1)
        self.stmt = t.emit("")
        t.open(self.stmt, f"if ({render(self.cond)})")

    def __exit__(self, *exc: Any) -> None:
        t = current()
        t.close(self.frame)
        t.last_closed_if = self.stmt


class else_:
    """``with tc.else_():`` directly after a ``with tc.if_(...)`` block: the other branch."""

    def __enter__(self) -> None:
        t = current()
        s = t.last_closed_if
        if s is None or len(s.blocks) != 1 or not t.stack[-1].stmts or t.stack[-1].stmts[-1] is not s:
            raise TraceError("tc.else_() must directly follow a `with tc.if_(...)` block")
        self.frame = sys._getframe(1)
        self.stmt = s
        t.open(s, "else")

    def __exit__(self, *exc: Any) -> None:
        t = current()
        t.close(self.frame)
        t.last_closed_if = None
