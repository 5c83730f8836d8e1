"""The contender registry: Missing with a reason, never a silent skip."""
import pytest

from tilecraft.bench.contenders import (
    Kernel,
    Missing,
    list_contenders,
    register_contender,
    resolve,
    unregister_contender,
)
from tilecraft.bench.problem import GemmProblem

P = GemmProblem(64, 64, 64, "bf16")


def test_builtins_listed():
    names = list_contenders()
    for n in ("cublas", "triton", "scaled_mm", "int4_mm", "tilecraft"):
        assert n in names and names[n]


@pytest.mark.parametrize("name", ["cublas", "triton", "scaled_mm", "int4_mm"])
def test_missing_without_cuda(no_cuda, name):
    dtype = {"scaled_mm": "fp8", "int4_mm": "w4a16"}.get(name, "bf16")
    got = resolve(name, GemmProblem(64, 64, 128, dtype))
    assert isinstance(got, Missing)
    assert got.reason
    assert "CUDA" in got.reason or "torch" in got.reason


def test_not_applicable_dtype_is_missing_with_reason():
    got = resolve("scaled_mm", P)
    assert isinstance(got, Missing) and "fp8" in got.reason
    got = resolve("int4_mm", P)
    assert isinstance(got, Missing) and "w4a16" in got.reason


def test_tilecraft_placeholder_missing():
    got = resolve("tilecraft", P)
    if isinstance(got, Missing):
        assert "tilecraft" in got.reason


def test_unknown_name():
    got = resolve("nosuch", P)
    assert isinstance(got, Missing) and "nosuch" in got.reason


def test_register_resolve_and_errors():
    def factory(problem):
        return Kernel(fn=lambda a, b: a, prepare=lambda x: (x.a, x.b), label="test")

    register_contender("test_k", factory, "a test kernel")
    try:
        k = resolve("test_k", P)
        assert isinstance(k, Kernel) and k.label == "test"
        with pytest.raises(ValueError):
            register_contender("test_k", factory)
        register_contender("test_k", lambda p: 1 / 0, replace=True)
        got = resolve("test_k", P)
        assert isinstance(got, Missing) and "ZeroDivisionError" in got.reason
        register_contender("test_k", lambda p: "nonsense", replace=True)
        assert isinstance(resolve("test_k", P), Missing)
    finally:
        unregister_contender("test_k")
    with pytest.raises(ValueError):
        register_contender("a,b", factory)


def test_placeholder_can_be_replaced_without_flag():
    from tilecraft.bench import contenders

    saved = contenders._REGISTRY["tilecraft"]
    try:
        # the placeholder itself (tilecraft.gemm may already have registered the real kernel)
        contenders._REGISTRY["tilecraft"] = contenders._Entry(contenders._tilecraft_placeholder, "")
        register_contender("tilecraft", lambda p: Missing("replaced"))
        assert resolve("tilecraft", P) == Missing("replaced")
    finally:
        contenders._REGISTRY["tilecraft"] = saved
