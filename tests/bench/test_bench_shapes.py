"""Named shape sets."""
import pytest

from tilecraft.bench.shapes import LLM_M, GemmShape, get_shapes, parse_shapes


def test_square():
    s = get_shapes("square")
    assert [x.mnk for x in s][0] == (1024, 1024, 1024)
    assert s[-1].mnk == (8192, 8192, 8192)
    assert all(x.m == x.n == x.k for x in s)
    assert s[0].name == "1024x1024x1024"


def test_llama_sets():
    s8 = get_shapes("llama8b")
    assert len(s8) == 4 * len(LLM_M) == 44
    nk = {(x.n, x.k) for x in s8}
    assert nk == {(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)}
    assert {x.m for x in s8} == {1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096}
    s70 = get_shapes("llama70b")
    assert {(x.n, x.k) for x in s70} == {(10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)}
    assert len(get_shapes("llm")) == 88
    assert GemmShape(16, 6144, 4096, "llama8b.qkv").name == "llama8b.qkv M=16"


def test_m_override():
    s = get_shapes("llama8b", ms=[1, 4096])
    assert len(s) == 8 and {x.m for x in s} == {1, 4096}


def test_skinny_is_split_k_territory():
    for x in get_shapes("skinny"):
        assert x.m * x.n <= 1024 * 1024
        assert x.k >= 32 * max(x.m, x.n)


def test_parse_shapes():
    assert [x.mnk for x in parse_shapes("4096x4096x4096,1x6144x4096")] == [(4096, 4096, 4096), (1, 6144, 4096)]
    s = parse_shapes("square+skinny")
    assert len(s) == len(get_shapes("square")) + len(get_shapes("skinny"))
    assert len(parse_shapes("llama8b", [1, 2])) == 8
    with pytest.raises(KeyError):
        parse_shapes("llama9b")
    with pytest.raises(ValueError):
        GemmShape(0, 1, 1)
