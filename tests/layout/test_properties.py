"""Each operation's defining property, checked on random layouts (hypothesis)."""
import itertools

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tilecraft as tc
from tilecraft import Layout

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))

small = st.integers(min_value=1, max_value=6)


@st.composite
def shapes(draw, max_rank=3, max_depth=2):
    def one(d):
        if d > 0 and draw(st.booleans()):
            return tuple(one(d - 1) for _ in range(draw(st.integers(1, 2))))
        return draw(small)
    return tuple(one(max_depth - 1) for _ in range(draw(st.integers(1, max_rank))))


@st.composite
def layouts(draw, max_rank=3):
    """Arbitrary layouts: random shapes, random non-negative strides (not necessarily injective)."""
    s = draw(shapes(max_rank))
    d = tc.unflatten([draw(st.integers(0, 24)) for _ in tc.flatten(s)], s)
    return Layout(s, d)


@st.composite
def injective_layouts(draw, max_rank=3):
    """Compact layouts with permuted mode order, optionally with gaps (still injective and complementable)."""
    s = draw(shapes(max_rank))
    flat = tc.flatten(s)
    order = draw(st.permutations(range(len(flat))))
    strides = [0] * len(flat)
    cur = 1
    for i in order:
        cur *= draw(st.sampled_from([1, 1, 2]))   # gaps keep divisibility
        strides[i] = cur
        cur *= flat[i]
    return Layout(s, tc.unflatten(strides, s))


def values(L):
    return [L(i) for i in range(tc.size(L))]


@SETTINGS
@given(layouts())
def test_coalesce_preserves_the_function(A):
    C = tc.coalesce(A)
    assert tc.size(C) == tc.size(A)
    assert tc.depth(C) <= 1
    assert values(C) == values(A)


@SETTINGS
@given(layouts())
def test_coalesce_by_mode_preserves_each_mode(A):
    C = tc.coalesce(A, (1,) * A.rank)
    assert C.rank == A.rank
    for i in range(A.rank):
        assert values(C[i]) == values(A[i])


@SETTINGS
@given(layouts())
def test_filter_keeps_the_image(A):
    F = tc.filter(A)
    assert set(values(F)) == set(values(A))
    assert all(not (isinstance(d, int) and d == 0) or tc.size(F) == 1 for d in tc.flatten((F.stride,)))


@SETTINGS
@given(layouts(), layouts(max_rank=2))
def test_composition_is_function_composition(A, B):
    try:
        R = tc.composition(A, B)
    except ValueError:
        assume(False)
    assert tc.compatible(B.shape, R.shape)
    for i in range(tc.size(B)):
        assert R(i) == A(B(i))


@SETTINGS
@given(injective_layouts(), st.integers(1, 4))
def test_complement_is_ordered_disjoint_and_covers(A, mult):
    M = tc.cosize(A) * mult
    C = tc.complement(A, M)
    cv = values(C)
    assert cv == sorted(cv) and len(set(cv)) == len(cv)
    image = set(values(A))
    assert all(c not in image for c in cv[1:])
    assert tc.size(C) * tc.size(A) >= M
    # (A, C) together is injective: every (a, c) lands on a distinct offset
    both = tc.make_layout(A, C)
    assert len(set(values(both))) == tc.size(both)


@SETTINGS
@given(layouts())
def test_right_inverse(A):
    R = tc.right_inverse(A)
    for i in range(tc.size(R)):
        assert A(R(i)) == i


@SETTINGS
@given(injective_layouts())
def test_left_inverse_of_injective(A):
    R = tc.left_inverse(A)
    for i in range(tc.size(A)):
        assert R(A(i)) == i


@SETTINGS
@given(injective_layouts(max_rank=2), injective_layouts(max_rank=1))
def test_logical_divide_definition(A, T):
    assume(tc.size(A) % tc.size(T) == 0)
    try:
        D = tc.logical_divide(A, T)
    except ValueError:
        assume(False)
    ref = tc.composition(A, tc.make_layout(T, tc.complement(T, tc.coalesce(A).shape)))
    assert D == ref
    # mode 0 is A seen through the tile; the tiles (mode 1) cover A's image exactly once
    assert values(D[0]) == [A(T(i)) for i in range(tc.size(T))]
    if tc.size(D) == tc.size(A):
        # the tiles partition A: every offset of A exactly once
        assert sorted(values(D)) == sorted(values(A))


@SETTINGS
@given(injective_layouts(max_rank=2), injective_layouts(max_rank=2))
def test_logical_product_definition(A, B):
    try:
        P = tc.logical_product(A, B)
    except ValueError:
        assume(False)
    assert P[0] == A
    comp = tc.complement(A, tc.size(A) * tc.cosize(B))
    assert values(P[1]) == [comp(B(i)) for i in range(tc.size(B))]


@SETTINGS
@given(st.tuples(small, small), st.tuples(small, small), st.tuples(small, small))
def test_zipped_divide_of_compact_layouts(tile, rest, perm):
    shape = (tile[0] * rest[0], tile[1] * rest[1])
    A = tc.make_layout(shape, tc.LayoutRight if perm[0] % 2 else tc.LayoutLeft)
    Z = tc.zipped_divide(A, tile)
    assert Z[0].shape == tile and tc.size(Z[1]) == rest[0] * rest[1]
    for (i, j) in itertools.product(range(tile[0]), range(tile[1])):
        for (a, b) in itertools.product(range(rest[0]), range(rest[1])):
            assert Z((i, j), (a, b)) == A(a * tile[0] + i, b * tile[1] + j)


@SETTINGS
@given(injective_layouts(max_rank=2), injective_layouts(max_rank=2))
def test_blocked_and_raked_products_are_zipped_logical_products(A, B):
    R = max(A.rank, B.rank)
    try:
        LP = tc.logical_product(tc.append(A, n=R), tc.append(B, n=R))
    except ValueError:
        assume(False)
    BP = tc.blocked_product(A, B)
    RP = tc.raked_product(A, B)
    modes = lambda M: [M[i] for i in range(R)] if R > 1 else [M]
    coords = list(itertools.product(*[range(tc.size(m)) for m in modes(LP[0])]))
    tcoords = list(itertools.product(*[range(tc.size(m)) for m in modes(LP[1])]))
    for a in coords:
        for b in tcoords:
            v = LP(a if R > 1 else a[0], b if R > 1 else b[0])
            assert BP(tuple((x, y) for x, y in zip(a, b))) == v
            assert RP(tuple((y, x) for x, y in zip(a, b))) == v


@SETTINGS
@given(injective_layouts(max_rank=2), st.sampled_from([2, 4, 8]))
def test_upcast_downcast_round_trip(A, n):
    assume(1 in tc.flatten((A.stride,)))
    assert tc.upcast(tc.downcast(A, n), n) == A


@SETTINGS
@given(shapes())
def test_idx2crd_inverts_crd2idx(s):
    for i in range(tc.product(s)):
        assert tc.crd2idx(tc.idx2crd(i, s), s) == i


@SETTINGS
@given(st.integers(1, 3), st.integers(0, 4), st.integers(3, 5), st.integers(0, 2047))
def test_swizzle_is_an_involution(b, m, s, x):
    assume(s >= b)
    sw = tc.Swizzle(b, m, s)
    assert sw(sw(x)) == x
