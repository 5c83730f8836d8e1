"""Symbolic expressions: C++ printing, constant folding, runtime comparisons and the errors a Python
`if` on a runtime value raises."""
from __future__ import annotations

import pytest

import tilecraft as tc
from tilecraft.dsl.expr import BoolExpr, IntExpr, TraceError, Value, Var, eq, ne, resolve, render, var_expr, where


def ivar(name: str, mag: int | None = None) -> IntExpr:
    return var_expr(Var(name), "int", mag)


def fvar(name: str) -> Value:
    return var_expr(Var(name), "float")


def cpp(e) -> str:
    return resolve(render(e))


def test_int_expressions_are_symbolic_ints_that_print_as_cpp():
    x, y = ivar("x"), ivar("y")
    assert isinstance(x, tc.SymbolicInt)
    assert cpp(x * 4 + y) == "x * 4 + y"
    assert cpp((x + y) * 4) == "(x + y) * 4"
    assert cpp(x - (y - 1)) == "x - (y - 1)"
    assert cpp(x // 8 % 4) == "x / 8 % 4"
    assert cpp(3 * x) == "x * 3"  # constants go right
    assert cpp(tc.layout.inttuple.imin(x, 5)) == "min(x, 5)"
    assert cpp(-x) == "-x"


@pytest.mark.parametrize("make,expected", [
    (lambda x: x + 0, "x"),
    (lambda x: x * 1, "x"),
    (lambda x: 0 * x, 0),
    (lambda x: x // 1, "x"),
    (lambda x: x % 1, 0),
    (lambda x: (x + 3) + 4, "x + 7"),
    (lambda x: (x + 3) - 3, "x"),
    (lambda x: (x * 8) * 4, "x * 32"),
    (lambda x: (x * 8) // 4, "x * 2"),
    (lambda x: (x * 8) % 4, 0),
    (lambda x: (x // 4) // 8, "x / 32"),
    (lambda x: x % 32 % 8, "x % 8"),
    (lambda x: x + (-2), "x - 2"),
    (lambda x: x - x, 0),
])
def test_constant_folding(make, expected):
    e = make(ivar("x"))
    assert (cpp(e) if isinstance(e, IntExpr) else e) == expected


def test_folding_uses_known_magnitudes():
    tid = ivar("tid", mag=256)  # threadIdx.x under launch_bounds(256)
    assert cpp(tid // 32 % 8) == "tid / 32"
    assert tid // 256 == 0
    assert cpp(tid % 256) == "tid"
    assert cpp(tid % 16) == "tid % 16"


def test_layout_algebra_on_symbolic_extents():
    M, K, ld, bx, tid = ivar("M"), ivar("K"), ivar("ldA"), ivar("bx"), ivar("tid", 256)
    mA = tc.Layout((M, K), (1, ld))
    assert cpp(mA(3, 2)) == "ldA * 2 + 3"
    gA = tc.local_tile(tc.Tensor(tc.ListEngine([0]), mA), (128, 128, 8), (bx, 0, None), (1, None, 1))
    assert tc.flatten(gA.shape)[:2] == (128, 8)
    assert cpp(tc.size(gA, 2)) == "(K + 7) / 8"
    assert cpp(gA.offset) == "bx * 128"
    tAgA = tc.local_partition(gA, tc.make_layout((32, 8)), tid)
    assert cpp(tAgA.offset) == "bx * 128 + tid % 32 + tid / 32 * ldA"


def test_values_and_conditions():
    a, b = fvar("a"), fvar("b")
    assert cpp(a * b + 1.5) == "a * b + 1.5f"
    assert cpp(a - (b - a)) == "a - (b - a)"
    assert cpp(2 * a) == "2.0f * a"
    x, n = ivar("x"), ivar("n")
    c = (x < n) & (x >= 0)
    assert isinstance(c, BoolExpr)
    assert cpp(c) == "x < n && x >= 0"
    assert cpp(~(x < n)) == "x >= n"
    assert cpp(eq(x, 3) | ne(x, n)) == "x == 3 || x != n"
    assert cpp(where(x < n, a, 0.0)) == "x < n ? a : 0.0f"
    assert (True & c) is c and (False & c) is False
    assert cpp(x * 0.5) == "x * 0.5f"


def test_equality_is_structural():
    x = ivar("x")
    assert (x + 1) == (x + 1) and hash(x + 1) == hash(x + 1)
    assert (x + 1) != (x + 2)
    assert x != 0
    assert tc.Layout((x, 4)) == tc.Layout((x, 4))


def test_truth_value_of_a_runtime_value_raises():
    x = ivar("x")
    with pytest.raises(TraceError, match=r"(?s)test_expr.py:\d+: Python `if`.*`x < 3`.*if x < 3:.*tc.if_"):
        if x < 3:
            pass
    with pytest.raises(TraceError, match="tc.range"):
        range(x)
    with pytest.raises(TraceError, match="use `//`"):
        x / 2
