"""The layout algebra: the issue's acceptance examples, API behaviour, and errors."""
import pytest

import tilecraft as tc
from tilecraft import Layout


def L(s, d=None):
    return Layout(s, d)


# --------------------------------------------------------------------------- acceptance examples

def test_hierarchical_coordinates():
    A = L((8, (2, 2)), (2, (1, 16)))
    assert str(A) == "(8,(2,2)):(2,(1,16))"
    assert A(17) == A(1, 2) == A(1, (0, 1)) == 18


def test_slice_keeps_modes_and_offset():
    A = L((8, (2, 2)), (2, (1, 16)))
    s = A(3, None)
    assert s == A(3, tc._)
    assert str(s) == "((2,2)):((1,16))"
    sub, off = tc.slice_and_offset((3, None), A)
    assert sub == s
    assert [off + sub(i) for i in range(tc.size(sub))] == [6, 7, 22, 23]
    sub, off = tc.slice_and_offset((5, (None, 1)), A)
    assert [off + sub(i) for i in range(tc.size(sub))] == [26, 27]


@pytest.mark.parametrize("fn, a, b, expected", [
    (tc.composition, L((6, 2), (8, 2)), L((4, 3), (3, 1)), "((2,2),3):((24,2),8)"),
    (tc.complement, L(4, 2), 24, "(2,3):(1,8)"),
    (tc.logical_divide, L((4, 2, 3), (2, 1, 8)), L(4, 2), "((2,2),(2,3)):((4,1),(2,8))"),
    (tc.zipped_divide, L((6, 8), (8, 1)), (3, 4), "((3,4),(2,2)):((8,1),(24,4))"),
    (tc.blocked_product, L((3, 4), (4, 1)), L((2, 5), (1, 2)), "((3,2),(4,5)):((4,12),(1,24))"),
    (tc.raked_product, L((3, 4), (4, 1)), L((2, 5), (1, 2)), "((2,3),(5,4)):((12,4),(24,1))"),
    (tc.logical_product, L((2, 2), (4, 1)), L(6, 1), "((2,2),(2,3)):((4,1),(2,8))"),
])
def test_issue_examples(fn, a, b, expected):
    assert str(fn(a, b)) == expected


def test_idx2crd_crd2idx():
    assert tc.idx2crd(16, (3, (2, 3))) == (1, (1, 2))
    assert tc.crd2idx((1, (1, 2)), (3, (2, 3))) == 16
    # every index of a hierarchical shape round-trips
    shp = (3, (2, 3))
    for i in range(18):
        assert tc.crd2idx(tc.idx2crd(i, shp), shp) == i
    # with strides: idx2crd inverts crd2idx for a compact layout
    assert tc.idx2crd(7, (2, 4), (4, 1)) == (1, 3)
    # a tuple shape with one integer stride: compact (column-major) from that stride, size-1 modes included
    assert tc.idx2crd(5, (2, 3), 1) == (1, 2)
    assert tc.idx2crd(10, (2, 3), 2) == (1, 2)
    assert tc.idx2crd(5, (2, (1, 3)), 1) == (1, (0, 2))


# --------------------------------------------------------------------------- construction and printing

def test_default_strides_are_cute_compact():
    assert str(L((8, 8))) == "(8,8):(1,8)"
    assert str(tc.make_layout((8, 8), tc.LayoutRight)) == "(8,8):(8,1)"
    assert str(tc.make_layout((2, (3, 4)), tc.LayoutRight)) == "(2,(3,4)):(12,(4,1))"
    # static size-1 modes get stride 0, as CuTe's compact_major does
    assert str(L((1, 4))) == "(1,4):(0,1)"
    assert str(L(4)) == "4:1"


def test_make_layout_concatenates():
    a, b = L(4, 1), L((2, 3), (4, 8))
    assert str(tc.make_layout(a, b)) == "(4,(2,3)):(1,(4,8))"
    assert str(tc.make_layout(a)) == "(4):(1)"


def test_modes_and_accessors():
    A = L((4, (2, 3)), (1, (4, 8)))
    assert A[1] == L((2, 3), (4, 8))
    assert A[1, 0] == L(2, 4) == tc.get(A, 1, 0)
    assert tc.rank(A) == 2 and tc.depth(A) == 2 and tc.size(A) == 24 and tc.cosize(A) == 3 + 4 + 16 + 1
    assert tc.select(A, 1, 0) == L(((2, 3), 4), ((4, 8), 1))
    assert str(tc.append(L(4, 1), L(2, 4))) == "(4,2):(1,4)"
    assert str(tc.prepend(L(4, 1), L(2, 4))) == "(2,4):(4,1)"
    assert str(tc.group(L((2, 3, 4), (1, 2, 6)), 1, 3)) == "(2,(3,4)):(1,(2,6))"
    assert str(tc.take(L((2, 3, 4), (1, 2, 6)), 1, 3)) == "(3,4):(2,6)"
    assert hash(A) == hash(L((4, (2, 3)), (1, (4, 8))))
    assert tc.make_ordered_layout((2, 3, 4, 5), (2, 0, 3, 1)) == L((2, 3, 4, 5), (15, 1, 30, 3))


def test_print_layout_matches_cute():
    text = tc.layout_table(L((2, 3), (3, 1)))
    assert text.splitlines() == [
        "(2,3):(3,1)",
        "      0   1   2 ",
        "    +---+---+---+",
        " 0  | 0 | 1 | 2 |",
        "    +---+---+---+",
        " 1  | 3 | 4 | 5 |",
        "    +---+---+---+",
    ]


def test_coalesce_filter():
    assert str(tc.coalesce(L((2, (1, 6)), (1, (6, 2))))) == "12:1"
    assert str(tc.coalesce(L((4, 1), (1, 0)))) == "4:1"
    assert str(tc.coalesce(L((2, 4), (1, 3)))) == "(2,4):(1,3)"
    assert str(tc.coalesce(L((2, (4, 3)), (1, (2, 8))), (1, 1))) == "(2,12):(1,2)"
    assert str(tc.coalesce(L(1, 7))) == "1:0"
    assert str(tc.filter(L((4, 2, 3), (1, 0, 4)))) == "12:1"


def test_inverses():
    A = L((4, 2), (2, 1))
    assert str(tc.right_inverse(A)) == "(2,4):(4,1)"
    assert str(tc.left_inverse(A)) == "(2,4):(4,1)"
    assert tc.max_common_vector(L((4, 8), (1, 4)), L((4, 8), (1, 4))) == 32
    assert tc.max_common_vector(L((4, 8), (1, 4)), L((4, 8), (8, 1))) == 1
    assert tc.max_common_vector(L((8, 8), (1, 8)), L((2, 4, 8), (1, 2, 8))) == 64


def test_products_and_tile_to_shape():
    assert str(tc.tile_to_shape(L((2, 2), (1, 2)), (8, 8))) == "((2,4),(2,4)):((1,4),(2,16))"
    # by-mode: 2:1 x 3 -> (2,3):(1,2); 2:2 x 4 -> (2,(2,2)):(2,(1,4)) (fills the holes of stride 2 first)
    assert str(tc.zipped_product(L((2, 2), (1, 2)), (3, 4))) == "((2,2),(3,(2,2))):((1,2),(2,(1,4)))"
    with pytest.raises(ValueError, match="does not divide"):
        tc.tile_to_shape(L((3, 2)), (8, 8))


def test_tiled_and_flat_divide():
    A = L((6, 8), (8, 1))
    assert str(tc.tiled_divide(A, (3, 4))) == "((3,4),2,2):((8,1),24,4)"
    assert str(tc.flat_divide(A, (3, 4))) == "(3,4,2,2):(8,1,24,4)"


def test_upcast_downcast():
    A = L((8, 64), (64, 1))           # 16-bit elements, row-major 8x64
    assert str(tc.upcast(A, 8)) == "(8,8):(8,1)"          # viewed as 128-bit elements
    assert str(tc.downcast(L((4, 8), (1, 4)), 2)) == "(8,8):(1,8)"
    assert tc.recast_layout(A, 16, 128) == tc.upcast(A, 8)
    assert tc.recast_layout(L((4, 8), (1, 4)), 32, 16) == tc.downcast(L((4, 8), (1, 4)), 2)
    with pytest.raises(ValueError):
        tc.downcast(L((4, 8), (2, 8)), 2)


def test_swizzle_and_composed_layout():
    sw = tc.Swizzle(3, 4, 3)
    assert str(sw) == "Sw<3,4,3>"
    # bits [7,10) xor into bits [4,7)
    assert sw(0b0010000000) == 0b0010010000
    assert sw(5) == 5
    C = tc.composition(sw, L((8, 64), (64, 1)))
    assert str(C) == "Sw<3,4,3> o 0 o (8,64):(64,1)"
    assert C(1, 0) == sw(64)
    # the swizzle permutes each 1024-element block
    assert sorted(C(i) for i in range(512)) == list(range(512))
    T = tc.tile_to_shape(C, (64, 64))
    assert isinstance(T, tc.ComposedLayout) and T.shape == ((8, 8), (64, 1)) or tc.size(T) == 64 * 64
    sl = C(2, None)
    assert [sl(i) for i in range(64)] == [C(2, j) for j in range(64)]
    with pytest.raises(ValueError):
        tc.Swizzle(3, 4, 2)


def test_identity_layout_maps_coordinates_to_themselves():
    I = tc.make_identity_layout((4, 6))
    assert I(2, 3) == (2, 3)
    assert I(9) == (1, 2)
    T = tc.zipped_divide(I, (2, 3))
    assert T((1, 2), (1, 1)) == (3, 5)


# --------------------------------------------------------------------------- errors

def test_composition_divisibility_errors():
    with pytest.raises(ValueError, match="stride divisibility"):
        tc.composition(L((4, 3), (1, 5)), L(2, 6))
    # a stride smaller than the mode is admissible (weak condition), as in CuTe
    assert str(tc.composition(L((4, 3), (1, 5)), L(2, 3))) == "2:3"
    with pytest.raises(ValueError, match="shape divisibility"):
        tc.composition(L((4, 3), (1, 5)), L(6, 1))
    with pytest.raises(ValueError, match="more modes"):
        tc.composition(L(4, 1), (2, 2))


def test_complement_errors():
    with pytest.raises(ValueError, match="not injective"):
        tc.complement(L((2, 2), (1, 1)), 8)
    with pytest.raises(ValueError, match="no complement"):
        tc.complement(L((2, 2), (1, 3)), 12)


def test_bad_layouts():
    with pytest.raises(ValueError, match="congruent"):
        Layout((2, 3), (1, (2, 3)))
    with pytest.raises(TypeError):
        Layout((2, 3.5))
    with pytest.raises(TypeError):
        Layout((2, "a"))
    with pytest.raises(ValueError):
        tc.crd2idx((1, 2, 3), (2, 3))


def test_left_inverse_errors():
    with pytest.raises(ValueError, match="divisibility"):
        tc.left_inverse(L((2, 2), (2, 3)))
    R = tc.left_inverse(L((2, 2), (1, 3)))
    assert [R(L((2, 2), (1, 3))(i)) for i in range(4)] == [0, 1, 2, 3]


def test_draw_svg_and_png(tmp_path):
    pic = tc.draw(L((4, 8), (8, 1)), tmp_path / "l.svg")
    assert pic.svg.startswith("<svg") and (tmp_path / "l.svg").read_text().count("<rect") == 32
    pytest.importorskip("matplotlib")
    pic.save(tmp_path / "l.png")
    assert (tmp_path / "l.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    tv = tc.draw_tv(L((4, 2), (2, 1)), (8, 1))
    assert tv.svg.count("T3") == 2
    assert tc.draw(L((4, 2), (2, 1)), tile=(8, 1)).svg == tv.svg




def test_public_api_is_documented_and_typed():
    import inspect
    import tilecraft.layout as layer1
    import tilecraft.tensor as layer2
    for mod in (layer1, layer2):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                sig = inspect.signature(obj)
                assert obj.__doc__, f"{name} has no docstring"
                assert all(p.annotation is not inspect.Parameter.empty for p in sig.parameters.values()), name
                assert sig.return_annotation is not inspect.Signature.empty, name
            elif inspect.isclass(obj):
                assert obj.__doc__, f"class {name} has no docstring"
