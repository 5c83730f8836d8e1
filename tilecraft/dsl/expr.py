"""Symbolic expressions of the kernel language: runtime values that print as CUDA C++.

Three Python classes share one representation (``op``, ``args``, ``ctype``): :class:`IntExpr` (a
:class:`~tilecraft.layout.SymbolicInt`, so the layout algebra computes with it), :class:`Value` (floats
and other element values) and :class:`BoolExpr` (conditions). Integer arithmetic folds constants as it
is built (``x + 0``, ``x * 1``, ``(x + 3) + 4``, ``(x * 8) // 4``, and ``x % c`` / ``x // c`` when the
magnitude of x is known to be below c), so generated code carries no dead arithmetic.

``==``/``hash`` are structural, as the layout algebra needs; runtime comparisons are ``<``, ``<=``,
``>``, ``>=`` and :func:`eq` / :func:`ne`. Asking for the truth value of an expression (a Python ``if``,
``while``, ``and``, ``or``, ``not``) raises :class:`TraceError` naming the kernel's line and what to use.
"""
from __future__ import annotations

import linecache
import math
import os
import re
import sys
import weakref
from typing import Any

from tilecraft.layout.inttuple import SymbolicInt

__all__ = ["Expr", "IntExpr", "Value", "BoolExpr", "Var", "TraceError", "eq", "ne", "where",
           "lit", "render", "resolve", "user_line"]


class TraceError(TypeError):
    """A kernel asked the tracer for something only the GPU knows, or used the language wrongly."""


class Var:
    """A named C++ variable (parameter, loop index, temporary, array, pointer).

    ``name`` may change after the statement that declares it was emitted (a temporary takes the name of
    the Python local it is bound to), so rendered text holds the placeholder ``ph`` until the kernel is
    finished.
    """

    __slots__ = ("name", "temp", "soft", "ph", "__weakref__")
    _count = 0

    def __init__(self, name: str, temp: bool = False):
        Var._count += 1
        self.name, self.temp = name, temp
        self.soft = False  # a made-up parameter name (shape_MNK_0) that the first local holding it replaces
        self.ph = f"\x01{Var._count}\x02"
        _VARS[self.ph] = self

    def __repr__(self) -> str:
        return self.name


# C++ precedence, lower binds tighter; a child is parenthesized when it binds more loosely than its
# parent (or equally, on the right: a - (b - c), and float sums keep their order).
_PREC = {
    "var": 0, "load": 0, "ref": 0, "call": 0, "cast": 0, "raw": 0,
    "neg": 2, "not": 2, "bnot": 2,
    "*": 3, "/": 3, "%": 3, "//": 3,
    "+": 4, "-": 4,
    "<<": 5, ">>": 5,
    "<": 6, "<=": 6, ">": 6, ">=": 6,
    "==": 7, "!=": 7,
    "&": 8, "^": 9, "|": 10, "&&": 11, "||": 12, "?:": 13,
}
_CMP = {"<", "<=", ">", ">=", "==", "!="}
_FLOAT_RANK = {"__half": 1, "__nv_bfloat16": 1, "float": 2, "double": 3}


def _kernel_internal(filename: str) -> bool:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    f = os.path.abspath(filename)
    return any(f.startswith(os.path.join(here, d) + os.sep) for d in ("dsl", "layout", "tensor"))


def user_line() -> tuple[str, int, str]:
    """(file, line, source text) of the innermost kernel-code frame (outside tilecraft's dsl, layout and
    tensor layers): where a traced operation came from."""
    f = sys._getframe(1)
    while f is not None and _kernel_internal(f.f_code.co_filename):
        f = f.f_back
    if f is None:
        return "<unknown>", 0, ""
    return f.f_code.co_filename, f.f_lineno, linecache.getline(f.f_code.co_filename, f.f_lineno).strip()


class Expr:
    """A runtime value: an operation on operands (Python numbers or other expressions) and its C++ type."""

    __slots__ = ("op", "args", "ctype", "mag", "div", "_hash", "bound")

    def __init__(self, op: str, args: tuple, ctype: str, mag: int | None = None, div: int = 1):
        self.op, self.args, self.ctype = op, args, ctype
        self.mag = mag  # exclusive bound on |value| when known (ints only)
        self.div = div  # a known divisor of the value (ints only)
        self._hash: int | None = None
        self.bound: Var | None = None  # set while a C++ variable holds this value (see trace.bind)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        return type(other) is type(self) and self.op == other.op and self.ctype == other.ctype \
            and self.args == other.args  # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self.op, self.ctype, tuple(id(a) if isinstance(a, Var) else a for a in self.args)))
        return self._hash

    def __bool__(self) -> bool:
        file, line, text = user_line()
        raise TraceError(
            f"{os.path.basename(file)}:{line}: Python `if`/`while`/`and`/`or`/`not` needs the truth value of the "
            f"runtime value `{_plain(self)}`, which only the GPU knows.\n    {line} | {text}\n"
            "Use `with tc.if_(cond):` (and `tc.else_()`) for a runtime branch, `tc.range(n)` for a runtime loop, "
            "`tc.where(cond, a, b)` for a value, and `&`, `|`, `~` to combine conditions.")

    def __index__(self) -> int:
        file, line, text = user_line()
        raise TraceError(f"{os.path.basename(file)}:{line}: the runtime value `{_plain(self)}` is used where Python "
                         f"needs a number (a range bound, a list index, a shape)\n    {line} | {text}\n"
                         "Use `tc.range(n)` to loop a runtime number of times.")

    def __iter__(self):
        raise TraceError(f"cannot iterate over the runtime value `{_plain(self)}`")

    def __repr__(self) -> str:
        return _plain(self)

    __str__ = __repr__

    # -- comparisons (runtime) and value arithmetic shared by ints and values
    def __lt__(self, o: Any) -> "BoolExpr": return _compare("<", self, o)
    def __le__(self, o: Any) -> "BoolExpr": return _compare("<=", self, o)
    def __gt__(self, o: Any) -> "BoolExpr": return _compare(">", self, o)
    def __ge__(self, o: Any) -> "BoolExpr": return _compare(">=", self, o)


_VARS: "weakref.WeakValueDictionary[str, Var]" = weakref.WeakValueDictionary()
_PH = re.compile("\x01\\d+\x02")


def resolve(text: str) -> str:
    """text with every variable placeholder replaced by the variable's current name."""
    def name(m: "re.Match[str]") -> str:
        v = _VARS.get(m.group(0))
        return v.name if v is not None else "?"
    return _PH.sub(name, text)


def _plain(e: Any) -> str:
    """Readable text of an expression for messages (variable names as they are now)."""
    return resolve(render(e))


def var_expr(v: Var, ctype: str, mag: int | None = None, div: int = 1) -> "Expr":
    """The expression reading variable v."""
    return make("var", (v,), ctype, mag, div)


def make(op: str, args: tuple, ctype: str, mag: int | None = None, div: int = 1) -> Any:
    """Build the node with the Python class that ctype calls for."""
    if ctype == "bool":
        return BoolExpr(op, args, ctype)
    if ctype in _INT_TYPES:
        return IntExpr(op, args, ctype, mag, div)
    return Value(op, args, ctype)


_INT_TYPES = {"int", "unsigned", "long long", "unsigned long long", "short", "char", "signed char",
              "unsigned char", "unsigned short"}


def _ctype_of(x: Any) -> str:
    if isinstance(x, Expr):
        return x.ctype
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int"
    if isinstance(x, float):
        return "float"
    raise TraceError(f"{x!r} ({type(x).__name__}) is not a number the kernel language can use")


def _promote(a: Any, b: Any) -> str:
    """The C++ type of a op b (floats win by rank; a Python float takes the other side's float type)."""
    ta, tb = _ctype_of(a), _ctype_of(b)
    fa, fb = _FLOAT_RANK.get(ta, 0), _FLOAT_RANK.get(tb, 0)
    if fa or fb:
        if not isinstance(a, Expr):
            return tb if fb else "float"
        if not isinstance(b, Expr):
            return ta if fa else "float"
        return ta if fa >= fb else tb
    return "int" if "int" in (ta, tb) or ta == tb == "bool" else ta


def _is_lit(x: Any, v: int) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x == v


def _pow2_divisor(n: int) -> int:
    return n & -n if n else 1 << 30


class IntExpr(Expr, SymbolicInt):
    """A runtime integer (C++ ``int``): thread and block indices, dynamic extents and strides, loop indices."""

    __slots__ = ()

    def _binop(self, op: str, other: Any, reflected: bool) -> Any:
        if isinstance(other, bool) or not isinstance(other, (int, float, Expr)):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        if isinstance(other, float) or (isinstance(other, Expr) and not isinstance(other, IntExpr)):
            return _arith(op, a, b)
        return int_op(op, a, b)

    def _unop(self, op: str) -> Any:
        if op == "-":
            if self.op == "neg":
                return self.args[0]
            return make("neg", (self,), self.ctype, self.mag, self.div)
        if op == "abs":
            return make("call", ("abs", self), self.ctype, self.mag, self.div)
        raise TraceError(f"unsupported unary {op} on {self}")

    def __truediv__(self, o: Any) -> Any:
        return _arith("/", self, o)

    def __rtruediv__(self, o: Any) -> Any:
        return _arith("/", o, self)

    def split_multiple(self, m: int) -> tuple[Any, Any]:
        """(rest, multiple): the terms of this sum whose known divisor is a multiple of m, split off."""
        if self.div % m == 0:
            return 0, self
        if self.op == "+" and self.bound is None:
            ra, wa = _split(self.args[0], m)
            rb, wb = _split(self.args[1], m)
            if not (_is_lit(wa, 0) and _is_lit(wb, 0)):
                return int_op("+", ra, rb), int_op("+", wa, wb)
        return self, 0

    def __pow__(self, o: Any) -> Any:
        raise TraceError("** on runtime integers is not supported")


def _split(x: Any, m: int) -> tuple[Any, Any]:
    if isinstance(x, IntExpr):
        return x.split_multiple(m)
    return (0, x) if isinstance(x, int) and x % m == 0 else (x, 0)


def int_op(op: str, a: Any, b: Any) -> Any:
    """a op b for integers (at least one an IntExpr), with constant folding."""
    if isinstance(a, int) and isinstance(b, int):
        return {"+": a + b, "-": a - b, "*": a * b, "//": _cdiv(a, b), "%": _cmod(a, b), "&": a & b, "|": a | b,
                "^": a ^ b, ">>": a >> b, "<<": a << b, "min": min(a, b), "max": max(a, b)}[op]
    if op == "+":
        if _is_lit(a, 0):
            return b
        if _is_lit(b, 0):
            return a
        if isinstance(a, int):  # constants go right: k + 8, not 8 + k
            a, b = b, a
        if isinstance(b, int) and a.op == "+" and isinstance(a.args[1], int) and a.bound is None:
            return int_op("+", a.args[0], a.args[1] + b)
        if isinstance(b, int) and a.op == "-" and isinstance(a.args[1], int) and a.bound is None:
            return int_op("+", a.args[0], b - a.args[1])
        if isinstance(b, int) and b < 0:
            return int_op("-", a, -b)
    elif op == "-":
        if _is_lit(b, 0):
            return a
        if isinstance(b, int) and a.op == "+" and isinstance(a.args[1], int) and a.bound is None:
            return int_op("+", a.args[0], a.args[1] - b)
        if isinstance(b, Expr) and a == b:
            return 0
    elif op == "*":
        if _is_lit(a, 0) or _is_lit(b, 0):
            return 0
        if _is_lit(a, 1):
            return b
        if _is_lit(b, 1):
            return a
        if isinstance(a, int):
            a, b = b, a
        if isinstance(b, int) and a.op == "*" and isinstance(a.args[1], int) and a.bound is None:
            return int_op("*", a.args[0], a.args[1] * b)
    elif op == "//":
        if _is_lit(b, 1):
            return a
        if _is_lit(a, 0):
            return 0
        if isinstance(b, int) and b > 0 and isinstance(a, Expr):
            if a.mag is not None and a.mag <= b:
                return 0
            if a.op == "*" and isinstance(a.args[1], int) and a.args[1] % b == 0 and a.bound is None:
                return int_op("*", a.args[0], a.args[1] // b)
            if a.op == "//" and isinstance(a.args[1], int) and a.args[1] > 0 and a.bound is None:
                return int_op("//", a.args[0], a.args[1] * b)
    elif op == "%":
        if _is_lit(b, 1) or _is_lit(a, 0):
            return 0
        if isinstance(b, int) and b > 0 and isinstance(a, Expr):
            if a.mag is not None and a.mag <= b:
                return a
            if a.div % b == 0:
                return 0
            if a.op == "%" and isinstance(a.args[1], int) and a.args[1] % b == 0 and a.bound is None:
                return int_op("%", a.args[0], b)
    elif op in ("min", "max"):
        if isinstance(a, int):
            a, b = b, a
        if isinstance(b, Expr) and a == b:
            return a
        return make("call", (op, a, b), "int", _max_mag(a, b), math.gcd(_div_of(a), _div_of(b)))
    return make(op, (a, b), _promote(a, b), _mag(op, a, b), _divisor(op, a, b))


def _cdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _cmod(a: int, b: int) -> int:
    return a - b * _cdiv(a, b)


def _mag_of(x: Any) -> int | None:
    if isinstance(x, int):
        return abs(x) + 1
    return x.mag if isinstance(x, Expr) else None


def _div_of(x: Any) -> int:
    if isinstance(x, int):
        return _pow2_divisor(abs(x)) if x else 1 << 30
    return x.div if isinstance(x, Expr) else 1


def _max_mag(a: Any, b: Any) -> int | None:
    ma, mb = _mag_of(a), _mag_of(b)
    return None if ma is None or mb is None else max(ma, mb)


def _mag(op: str, a: Any, b: Any) -> int | None:
    ma, mb = _mag_of(a), _mag_of(b)
    if op == "%" and isinstance(b, int):
        return min(abs(b), ma) if ma is not None else abs(b)
    if ma is None or mb is None:
        return None
    if op in ("+", "-"):
        return ma + mb
    if op == "*":
        return (ma - 1) * (mb - 1) + 1
    if op == "//" and isinstance(b, int) and b:
        return (ma - 1) // abs(b) + 1
    return None


def _divisor(op: str, a: Any, b: Any) -> int:
    da, db = _div_of(a), _div_of(b)
    if op in ("+", "-"):
        return math.gcd(da, db)
    if op == "*":
        return min(da * db, 1 << 30)
    if op == "%" and isinstance(b, int):
        return math.gcd(da, abs(b)) if b else 1
    # bitwise: what is known is the trailing zero bits (a swizzle's XOR keeps an aligned offset aligned)
    pa, pb = da & -da, db & -db
    if op in ("^", "|"):
        return min(pa, pb)
    if op == "&":
        return max(pa, pb)
    if op == ">>" and isinstance(b, int) and b >= 0:
        return max(pa >> b, 1)
    if op == "<<" and isinstance(b, int) and 0 <= b < 30:
        return min(pa << b, 1 << 30)
    return 1


class Value(Expr):
    """A runtime element value (``float``, ``double``, ...): loads, kernel scalars, arithmetic on them."""

    __slots__ = ()

    def __add__(self, o: Any) -> Any: return _arith("+", self, o)
    def __radd__(self, o: Any) -> Any: return _arith("+", o, self)
    def __sub__(self, o: Any) -> Any: return _arith("-", self, o)
    def __rsub__(self, o: Any) -> Any: return _arith("-", o, self)
    def __mul__(self, o: Any) -> Any: return _arith("*", self, o)
    def __rmul__(self, o: Any) -> Any: return _arith("*", o, self)
    def __truediv__(self, o: Any) -> Any: return _arith("/", self, o)
    def __rtruediv__(self, o: Any) -> Any: return _arith("/", o, self)

    def __neg__(self) -> "Value":
        return make("neg", (self,), self.ctype)

    def __abs__(self) -> "Value":
        return make("call", ("fabsf" if self.ctype == "float" else "fabs", self), self.ctype)


_HALF_CTYPES = ("tc::f16", "tc::bf16")


def _widen(x: Any) -> Any:
    """A 16-bit float storage value as float (atoms.cuh's tc::to_f32): arithmetic happens in fp32."""
    return make("call", ("tc::to_f32", x), "float") if isinstance(x, Expr) and x.ctype in _HALF_CTYPES else x


def _arith(op: str, a: Any, b: Any) -> Any:
    if not isinstance(a, (int, float, Expr)) or not isinstance(b, (int, float, Expr)):
        return NotImplemented
    a, b = _widen(a), _widen(b)
    if isinstance(a, IntExpr) and isinstance(b, IntExpr) or (isinstance(a, IntExpr) and isinstance(b, int)) \
            or (isinstance(a, int) and isinstance(b, IntExpr)):
        if op == "/":
            raise TraceError(f"`/` on runtime integers {a} and {b}: use `//` (C++ integer division)")
        return int_op(op, a, b)
    return make(op, (a, b), _promote(a, b))


def _compare(op: str, a: Any, b: Any) -> Any:
    if not isinstance(b, (int, float, Expr)) or isinstance(b, BoolExpr):
        return NotImplemented
    return make(op, (a, b), "bool")


def eq(a: Any, b: Any) -> Any:
    """The runtime condition a == b (Python's ``==`` on expressions compares their structure)."""
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        return a == b
    return make("==", (a, b), "bool")


def ne(a: Any, b: Any) -> Any:
    """The runtime condition a != b."""
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        return a != b
    return make("!=", (a, b), "bool")


class BoolExpr(Expr):
    """A runtime condition. Combine with ``&``, ``|``, ``~`` (Python's and/or/not need a truth value)."""

    __slots__ = ()

    def __and__(self, o: Any) -> Any: return _logic("&&", self, o)
    def __rand__(self, o: Any) -> Any: return _logic("&&", o, self)
    def __or__(self, o: Any) -> Any: return _logic("||", self, o)
    def __ror__(self, o: Any) -> Any: return _logic("||", o, self)

    def __invert__(self) -> Any:
        if self.op in _CMP:
            flip = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}[self.op]
            return make(flip, self.args, "bool")
        return make("not", (self,), "bool")


def _logic(op: str, a: Any, b: Any) -> Any:
    for x, y in ((a, b), (b, a)):
        if isinstance(x, bool):
            if op == "&&":
                return y if x else False
            return True if x else y
    if not isinstance(a, BoolExpr) or not isinstance(b, BoolExpr):
        return NotImplemented
    return make(op, (a, b), "bool")


def where(cond: Any, a: Any, b: Any) -> Any:
    """cond ? a : b, the value-level branch (a Python bool picks now). Both values exist before the
    choice: a memory read in a or b has run already; guard a read with read_if or copy_if."""
    if isinstance(cond, bool):
        return a if cond else b
    if not isinstance(cond, BoolExpr):
        raise TraceError(f"where needs a condition, got {cond!r}")
    if _ctype_of(a) != _ctype_of(b):  # e.g. an f16 load and a literal 0: choose between floats
        a, b = _widen(a), _widen(b)
    return make("?:", (cond, a, b), _promote(a, b), _max_mag(a, b), math.gcd(_div_of(a), _div_of(b)))


def lit(v: Any, ctype: str = "") -> str:
    """A C++ literal for a Python number in a context of type ctype."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        if _FLOAT_RANK.get(ctype):
            return lit(float(v), ctype)
        s = str(v) if -2**31 <= v < 2**31 else f"{v}LL"
        return f"({s})" if v < 0 else s
    if isinstance(v, float):
        if not math.isfinite(v):
            raise TraceError(f"the literal {v} has no C++ spelling; pass it as a kernel argument")
        s = repr(v)
        if ctype == "double":
            return f"({s})" if v < 0 else s
        s = s + "f"
        return f"({s})" if v < 0 else s
    raise TraceError(f"{v!r} is not a number")


def _prec(x: Any) -> int:
    if isinstance(x, Expr):
        return 0 if x.bound is not None else _PREC[x.op]
    return 0


def render(e: Any, ctype: str = "") -> str:
    """C++ text of e (variables as placeholders, see Var). ctype types Python literals."""
    if not isinstance(e, Expr):
        return lit(e, ctype)
    if e.bound is not None:
        return e.bound.ph
    op, args = e.op, e.args
    if op == "var":
        return args[0].ph
    if op in ("ref", "load"):
        return args[0].render_access(*args[1:])
    if op == "raw":
        return args[0]
    if op == "call":
        return f"{args[0]}({', '.join(render(a, e.ctype) for a in args[1:])})"
    if op == "cast":
        return f"{args[0]}({render(args[1])})"
    if op in ("neg", "not", "bnot"):
        sym = {"neg": "-", "not": "!", "bnot": "~"}[op]
        inner = render(args[0], e.ctype)
        return f"{sym}({inner})" if _prec(args[0]) > 2 or inner.startswith(sym) else sym + inner
    if op == "?:":
        c, a, b = args
        ty = e.ctype
        return f"{_wrap(c, 12, '')} ? {_wrap(a, 12, ty)} : {_wrap(b, 13, ty)}"
    p = _PREC[op]
    ty = _promote(args[0], args[1]) if op in _CMP else e.ctype
    sym = "/" if op == "//" else op
    right = args[1]
    # integer + and * associate, so x + (y + z) prints as x + y + z (floats keep their parentheses)
    flat = isinstance(e, IntExpr) and isinstance(right, Expr) and right.bound is None and \
        ((op == "+" and right.op in ("+", "-")) or (op == "*" and right.op == "*"))
    return f"{_wrap(args[0], p, ty)} {sym} {_wrap(right, p if flat else p - 1, ty)}"


def _wrap(x: Any, limit: int, ctype: str) -> str:
    s = render(x, ctype)
    return f"({s})" if _prec(x) > limit else s
