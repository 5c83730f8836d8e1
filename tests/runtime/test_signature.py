"""Parsing kernel parameter types from CUDA C++ declarations."""
from __future__ import annotations

import pytest

from tilecraft.runtime.signature import param_from_ctype, parse_signatures


def kinds(decl):
    return [(p.name, p.kind, p.fmt, p.size) for p in decl.params]


def test_scalars_pointers_and_qualifiers():
    src = """
    // extern "C" __global__ void commented_out(int x);
    extern "C" __global__ void __launch_bounds__(256, 2)
    k(float* __restrict__ out, const float* const a, int n, unsigned m, long long big,
      unsigned long long ubig, double d, float f, bool flag, short s, unsigned char c,
      tc::i32 i, tc::u64 u, size_t sz, const __half h, __nv_bfloat16 b, int32_t x32) {}
    """
    d = parse_signatures(src)
    assert list(d) == ["k"]
    assert kinds(d["k"]) == [
        ("out", "ptr", "Q", 8), ("a", "ptr", "Q", 8), ("n", "scalar", "i", 4), ("m", "scalar", "I", 4),
        ("big", "scalar", "q", 8), ("ubig", "scalar", "Q", 8), ("d", "scalar", "d", 8), ("f", "scalar", "f", 4),
        ("flag", "scalar", "?", 1), ("s", "scalar", "h", 2), ("c", "scalar", "B", 1), ("i", "scalar", "i", 4),
        ("u", "scalar", "Q", 8), ("sz", "scalar", "Q", 8), ("h", "scalar", "e", 2), ("b", "scalar", "bf16", 2),
        ("x32", "scalar", "i", 4),
    ]  # fmt: skip


def test_float_parameter_is_four_bytes_not_double():
    (p,) = parse_signatures('extern "C" __global__ void k(float alpha) {}')["k"].params
    assert (p.fmt, p.size) == ("f", 4)


def test_tensor_map_struct_and_unknown_struct():
    src = """
    struct Params { int a; float b; };
    extern "C" __global__ void k(const __grid_constant__ CUtensorMap tmap, Params p, const float* __restrict__ q) {}
    """
    tmap, p, q = parse_signatures(src)["k"].params
    assert (tmap.name, tmap.kind, tmap.size, tmap.align) == ("tmap", "struct", 128, 64)
    assert (p.name, p.kind, p.ctype, p.size) == ("p", "struct", "Params", None)
    assert q.kind == "ptr"


def test_extern_c_block_unnamed_params_arrays_and_void():
    src = """
    extern "C" {
    __global__ void a(int, float*) {}
    __global__ void b(void) {}
    __global__ void c(float x[], unsigned int) {}
    }
    """
    d = parse_signatures(src)
    assert [(p.name, p.kind) for p in d["a"].params] == [("arg0", "scalar"), ("arg1", "ptr")]
    assert d["b"].params == ()
    assert [(p.kind, p.fmt) for p in d["c"].params] == [("ptr", "Q"), ("scalar", "I")]


def test_cxx_linkage_and_template_kernels_are_reported_not_parsed():
    src = """
    template <int N> __global__ void t(float* x) {}
    __global__ void plain(int n) {}
    extern "C" __global__ void ok(int n) {}
    """
    d = parse_signatures(src)
    assert d["ok"].params is not None
    assert d["t"].params is None and "extern" in d["t"].error
    assert d["plain"].params is None and "mangled" in d["plain"].error


def test_preprocessor_lines_and_cluster_dims_are_skipped():
    src = """
    #include <tilecraft/tilecraft.cuh>
    #define N(x) \\
        (x)
    extern "C" __global__ void __cluster_dims__(2, 1, 1) k(int* a) {}
    """
    assert [p.kind for p in parse_signatures(src)["k"].params] == ["ptr"]


def test_param_from_ctype_strings():
    assert param_from_ctype("const float*").kind == "ptr"
    assert param_from_ctype("unsigned long long").fmt == "Q"
    assert param_from_ctype("CUtensorMap").size == 128
    with pytest.raises(ValueError, match="reference"):
        param_from_ctype("int&")
