"""Tensors and partitioning: the seeds' examples exactly, engines, views, and properties."""
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tilecraft as tc

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def rows(t):
    """The printed value rows of print_tensor, as lists of ints."""
    return [[int(v) for v in line.split()] for line in tc.tensor_str(t).splitlines()[1:]]


# --------------------------------------------------------------------------- seed 000: local_tile / local_partition

def test_seed000_local_tile():
    A = tc.make_tensor(np.arange(64), tc.make_layout((8, 8)))
    assert rows(A)[0] == [0, 8, 16, 24, 32, 40, 48, 56]
    c = tc.local_tile(A, (4, 4), (0, 1))
    assert str(c.layout) == "(4,4):(1,8)"
    assert rows(c) == [[32, 40, 48, 56], [33, 41, 49, 57], [34, 42, 50, 58], [35, 43, 51, 59]]
    assert c((0, 1)) == 40 and c[(0, 1)] == 40
    assert c(2) == 34 and c[2] == 34


def test_seed000_local_tile_all_tiles():
    A = tc.make_tensor(np.arange(64), tc.make_layout((8, 8)))
    c = tc.local_tile(A, (4, 4), (0, tc._))
    assert c.shape == (4, 4, 2)
    s = c[:, :, 0]
    assert s.shape == (4, 4) and s == s  # a view, not a copy
    assert s((0, 1)) == 8 and s(2) == 2
    assert c(None, None, 0)((0, 1)) == 8 and c(None, None, 0)[2] == 2
    assert c(None, None, 1)((0, 1)) == 40


def test_seed000_local_tile_projection():
    B = tc.make_tensor(np.arange(64), tc.make_layout((8, 8), (8, 1)))
    x = tc.local_tile(B, (4, 1, 4), (0, 0, None), proj=(1, None, 1))
    y = tc.local_tile(B, (4, 4), (0, None))
    assert str(x.layout) == str(y.layout) == "(4,4,2):(8,1,4)"
    assert x.tolist() == y.tolist()
    assert rows(x(None, None, 0)) == [[0, 1, 2, 3], [8, 9, 10, 11], [16, 17, 18, 19], [24, 25, 26, 27]]


def test_seed000_local_partition():
    A = tc.make_tensor(np.arange(16), tc.make_layout((4, 4), (4, 1)))
    cta = tc.make_layout((2, 2), tc.LayoutRight)
    t = tc.local_partition(A, cta, 1)
    assert str(t.layout) == "(2,2):(8,2)"
    assert rows(t) == [[1, 3], [9, 11]]
    # LayoutLeft vs LayoutRight only renames the threads, not the split
    t2 = tc.local_partition(A, tc.make_layout((2, 2)), 2)
    assert t2.tolist() == t.tolist()


# --------------------------------------------------------------------------- seeds 002/003: gemm_device partitions

@pytest.mark.parametrize("bx, by, tid", [(0, 0, 0), (1, 0, 37), (0, 1, 255), (1, 1, 100)])
def test_gemm_device_partitions(bx, by, tid):
    M, N, K = 256, 256, 64
    mA = tc.make_tensor(np.arange(M * K), tc.make_layout((M, K)))          # (M,K) m-major
    cta_tiler = (128, 128, 8)
    gA = tc.local_tile(mA, cta_tiler, (bx, by, None), proj=(1, None, 1))   # (BLK_M,BLK_K,k)
    assert gA.shape == (128, 8, K // 8)
    assert gA(3, 2, 5) == mA(bx * 128 + 3, 5 * 8 + 2)
    tA = tc.make_layout((32, 8))
    tAgA = tc.local_partition(gA, tA, tid)                                 # (THR_M,THR_K,k)
    assert tAgA.shape == (4, 1, K // 8)
    m, k = tid % 32, tid // 32
    for i, kt in itertools.product(range(4), range(K // 8)):
        assert tAgA(i, 0, kt) == mA(bx * 128 + m + 32 * i, kt * 8 + k)
    sA = tc.make_tensor(np.arange(128 * 8), tc.make_layout((128, 8)))     # (BLK_M,BLK_K)
    tC = tc.make_layout((16, 16))
    tCsA = tc.local_partition(sA, tC, tid, proj=(1, None))                 # (THR_M,BLK_K)
    assert tCsA.shape == (8, 8)
    for i, kk in itertools.product(range(8), range(8)):
        assert tCsA(i, kk) == sA(tid % 16 + 16 * i, kk)
    mC = tc.make_tensor(np.arange(M * N), tc.make_layout((M, N)))
    gC = tc.local_tile(mC, cta_tiler, (bx, by, None), proj=(1, 1, None))   # (BLK_M,BLK_N)
    tCgC = tc.local_partition(gC, tC, tid, proj=(1, 1))                    # (THR_M,THR_N)
    assert tCgC.shape == (8, 8)
    assert tCgC(2, 3) == mC(bx * 128 + tid % 16 + 32, by * 128 + tid // 16 + 48)


# --------------------------------------------------------------------------- seed 001: hierarchical tensor

def test_seed001_hierarchical_tensor():
    A = tc.make_tensor(np.arange(32), tc.Layout((8, (2, 2)), (2, (1, 16))))
    assert A(17) == A(1, 2) == A(1, (0, 1)) == 18
    assert A(3, tc._).tolist() == [6, 7, 22, 23]
    assert A(5, (tc._, 1)).tolist() == [26, 27]


# --------------------------------------------------------------------------- engines, views, helpers

def test_views_share_storage_and_assignment():
    a = np.arange(16)
    A = tc.make_tensor(a, tc.make_layout((4, 4)))
    col = A[:, 1]
    col[2] = -1
    assert a[6] == -1 and A(2, 1) == -1
    A[0, 0] = 99
    assert a[0] == 99
    A[:, 3] = 7
    assert list(a[12:16]) == [7, 7, 7, 7]
    A[:, 2] = [1, 2, 3, 4]
    assert list(a[8:12]) == [1, 2, 3, 4]
    with pytest.raises(ValueError):
        A[:, 2] = [1, 2]


def test_make_tensor_takes_array_strides():
    a = np.arange(24).reshape(4, 6)
    t = tc.make_tensor(a)
    assert str(t.layout) == "(4,6):(6,1)"
    assert all(t(i, j) == a[i, j] for i in range(4) for j in range(6))
    tf = tc.make_tensor(np.asfortranarray(a))
    assert str(tf.layout) == "(4,6):(1,4)" and tf(3, 5) == a[3, 5]
    ts = tc.make_tensor(a[:, ::2])
    assert str(ts.layout) == "(4,3):(6,2)" and ts(2, 1) == a[2, 2]


def test_python_sequences():
    t = tc.make_tensor(list(range(12)), tc.make_layout((3, 4), tc.LayoutRight))
    assert t(1, 2) == 6
    t[1, 2] = 60
    assert t(1, 2) == 60
    r = tc.make_tensor(range(12), (3, 4))
    assert r(2, 3) == 11
    with pytest.raises(TypeError, match="read-only"):
        r[0, 0] = 1


def test_errors():
    with pytest.raises(ValueError, match="reaches offset"):
        tc.make_tensor(np.arange(10), tc.make_layout((4, 4)))
    A = tc.make_tensor(np.arange(16), tc.make_layout((4, 4)))
    with pytest.raises(TypeError, match="':'"):
        A[1:3, 0]
    with pytest.raises(ValueError):
        A(1, 2, 3)
    with pytest.raises(ValueError, match="outside the thread layout"):
        tc.local_partition(A, tc.make_layout((2, 2)), 4)
    with pytest.raises(TypeError):
        tc.make_tensor(object(), tc.make_layout(4))


def test_identity_tensor_predicates():
    I = tc.make_identity_tensor((5, 7))
    assert I(4, 6) == (4, 6) and I(12) == (2, 2)
    tile = tc.local_tile(I, (4, 4), (1, 1))
    assert tile(0, 0) == (4, 4) and tile(3, 3) == (7, 7)
    inside = [tile(i, j)[0] < 5 and tile(i, j)[1] < 7 for i in range(4) for j in range(4)]
    assert sum(inside) == 1 * 3
    part = tc.local_partition(I, tc.make_layout((2, 2)), 3)
    assert part(0, 0) == (1, 1) and part(1, 2) == (3, 5)


def test_fragment_and_tensor_like():
    sA = tc.make_tensor(np.zeros(128 * 8, dtype=np.float32), tc.make_layout((128, 8)))
    frag = tc.make_fragment_like(tc.local_partition(sA, tc.make_layout((16, 16)), 3, proj=(1, None)))
    assert frag.shape == (8, (8,)) and frag.dtype == np.float32 and tc.cosize(frag.layout) == 64
    like = tc.make_tensor_like(tc.make_tensor(np.zeros(12), tc.make_layout((3, 4), tc.LayoutRight)))
    assert str(like.layout) == "(3,4):(4,1)"
    assert str(tc.make_layout_like(tc.Layout((2, 3, 4, 5), (0, 42, 1, 0)))) == "(2,3,4,5):(0,4,1,0)"


def test_recast_and_domain_offset():
    a = np.arange(16, dtype=np.float16)
    t = tc.make_tensor(a, tc.make_layout((4, 4)))
    r = tc.recast(t, np.float32)
    assert str(r.layout) == "(2,4):(1,2)" and r.dtype == np.float32
    assert np.float32(r(1, 0)).tobytes() == a[2:4].tobytes()
    d = tc.domain_offset((1, 2), tc.make_tensor(np.arange(16), (4, 4)))
    assert d(0, 0) == 9 and d(1, 1) == 14


def test_tensor_versions_of_the_algebra():
    A = tc.make_tensor(np.arange(48), tc.make_layout((6, 8), (8, 1)))
    Z = tc.zipped_divide(A, (3, 4))
    assert str(Z.layout) == "((3,4),(2,2)):((8,1),(24,4))"
    assert Z((1, 2), (1, 1)) == A(4, 6)
    assert tc.flat_divide(A, (3, 4)).shape == (3, 4, 2, 2)
    assert tc.tiled_divide(A, (3, 4)).shape == ((3, 4), 2, 2)
    assert tc.composition(A, (2, 4)).tolist() == [A(i, j) for j in range(4) for i in range(2)]


def test_torch_engine():
    torch = pytest.importorskip("torch")
    T = torch.arange(64).reshape(8, 8)
    t = tc.make_tensor(T)
    assert str(t.layout) == "(8,8):(8,1)" and t(1, 2) == 10
    t[1, 2] = -5
    assert int(T[1, 2]) == -5
    c = tc.local_tile(t, (4, 4), (1, 0))
    assert c(0, 0) == 32
    f = tc.make_fragment_like(c)
    assert f.engine.flat.dtype == T.dtype
    r = tc.recast(tc.make_tensor(torch.zeros(8, dtype=torch.float16)), torch.float32)
    assert r.shape == 4


def test_print_tensor_rank3(capsys):
    A = tc.make_tensor(np.arange(64), tc.make_layout((8, 8)))
    tc.print_tensor(tc.local_tile(A, (4, 4), (0, None)))
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("numpy[int64] o (4,4,2):(1,8,32)")
    assert out[1].split() == ["0", "8", "16", "24"] and set(out[5]) == {"-"}
    assert out[6].split() == ["32", "40", "48", "56"]


def test_draw_partition(tmp_path):
    A = tc.make_tensor(np.arange(16), tc.make_layout((4, 4), (4, 1)))
    pic = tc.draw_partition(A, tc.make_layout((2, 2), tc.LayoutRight), tmp_path / "p.svg")
    cells = {(m, n): text for (m, n, text, _c) in pic._cells}
    assert cells[(0, 1)].startswith("T1") and cells[(2, 3)].startswith("T1") and cells[(1, 1)].startswith("T3")
    assert (tmp_path / "p.svg").exists()
    assert tc.draw(tc.local_partition(A, tc.make_layout((2, 2)), 0)).svg.count("<rect") == 4


# --------------------------------------------------------------------------- properties

@SETTINGS
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.booleans())
def test_local_tile_covers_each_element_once(tm, tn, rm, rn, right):
    M, N = tm * rm, tn * rn
    A = tc.make_tensor(np.arange(M * N), tc.make_layout((M, N), tc.LayoutRight if right else tc.LayoutLeft))
    seen = []
    for i, j in itertools.product(range(rm), range(rn)):
        tile = tc.local_tile(A, (tm, tn), (i, j))
        assert tile.shape == (tm, tn)
        seen += tile.tolist()
        # agrees with the zipped_divide definition
        Z = tc.zipped_divide(A, (tm, tn))
        assert tile.tolist() == Z(None, (i, j)).tolist()
    assert sorted(seen) == list(range(M * N))


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.booleans(), st.booleans())
def test_local_partition_covers_each_element_once(thr_m, thr_n, vm, vn, right, thr_right):
    M, N = thr_m * vm, thr_n * vn
    A = tc.make_tensor(np.arange(M * N), tc.make_layout((M, N), tc.LayoutRight if right else tc.LayoutLeft))
    thr = tc.make_layout((thr_m, thr_n), tc.LayoutRight if thr_right else tc.LayoutLeft)
    seen = []
    for tid in range(thr_m * thr_n):
        part = tc.local_partition(A, thr, tid)
        assert part.shape == (vm, vn)
        seen += part.tolist()
        Z = tc.zipped_divide(A, (thr_m, thr_n))
        m, n = tc.idx2crd(tid, thr.shape, thr.stride)
        assert part.tolist() == Z((m, n), None).tolist()
    assert sorted(seen) == list(range(M * N))


@SETTINGS
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 3), st.integers(1, 3))
def test_identity_tensor_tiles_give_coordinates(tm, tn, rm, rn):
    I = tc.make_identity_tensor((tm * rm, tn * rn))
    for i, j in itertools.product(range(rm), range(rn)):
        t = tc.local_tile(I, (tm, tn), (i, j))
        assert all(t(a, b) == (i * tm + a, j * tn + b) for a in range(tm) for b in range(tn))
    assume(True)


@pytest.mark.gpu
def test_torch_cuda_engine_host_access():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    T = torch.arange(64, device="cuda", dtype=torch.float32).reshape(8, 8)
    t = tc.make_tensor(T)
    assert t.engine.describe().startswith("torch[float32, cuda")
    c = tc.local_tile(t, (4, 4), (1, 1))
    assert c(1, 2) == float(T[5, 6])
    c[1, 2] = -1.0
    assert float(T[5, 6]) == -1.0
    part = tc.local_partition(t, tc.make_layout((2, 4)), 5)
    assert part.tolist() == [float(T[1 + 2 * i, 2 + 4 * j]) for j in range(2) for i in range(4)]


class _Sym(tc.SymbolicInt):
    """A minimal symbolic integer (a runtime extent or stride, as inside a traced kernel)."""

    def __init__(self, name):
        self.name = name

    def _binop(self, op, other, reflected):
        return _Sym(f"({other}{op}{self})" if reflected else f"({self}{op}{other})")

    def _unop(self, op):
        return _Sym(f"{op}{self}")

    def __eq__(self, other):
        return isinstance(other, _Sym) and other.name == self.name

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return self.name


def test_like_layouts_with_symbolic_strides_are_column_major():
    # The order of symbolic strides is unknown, so the fresh storage is compact column-major (as in
    # CuTe's make_tensor_like(tCgC) in the tutorial gemm, where ldC is dynamic).
    ld = _Sym("ldC")
    L = tc.Layout((8, 8), (16, ld * 16))
    assert tc.make_layout_like(L) == tc.Layout((8, 8), (1, 8))
    t = tc.Tensor(tc.ListEngine([0] * 4), L)
    assert tc.make_tensor_like(t).layout == tc.Layout((8, 8), (1, 8))
    frag = tc.make_fragment_like(t).layout
    assert tc.flatten(frag.shape) == (8, 8) and tc.flatten(frag.stride) == (1, 8)
    # static strides keep their order
    assert tc.make_layout_like(tc.Layout((4, 8), (8, 1))) == tc.Layout((4, 8), (8, 1))


def test_make_fragment_like_of_swizzled_smem_is_laid_out_like_the_inner_layout():
    # CuTe: make_fragment_like(Swizzle o L) == make_fragment_like(L); registers are never swizzled
    sw = tc.composition(tc.Swizzle(3, 3, 3), tc.Layout(((2, 4), 8, 2), ((8, 64), 1, 512)))
    t = tc.make_tensor(np.zeros(1024, dtype=np.float16), sw)
    frag = tc.make_fragment_like(t)
    assert frag.layout == tc.make_fragment_like(sw.inner) == tc.make_fragment_like(sw)
    assert frag.layout == tc.Layout(((2, 4), 8, 2), ((1, 2), 8, 64)) and frag.dtype == np.float16
