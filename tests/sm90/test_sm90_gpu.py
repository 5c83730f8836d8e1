"""sm90 primitives on a Hopper GPU: TMA loads into swizzled shared memory (2-5 d maps), a TMA store
round trip, wgmma m64n128k16 on TMA-written tiles, and TMA multicast in a cluster of two.

Every check reads results through the same layout objects that built the maps and descriptors:
element (i, j) of a tile must sit at byte ``layout(i, j) * element_size`` of the shared-memory image.
Run with ``python -m pytest -q -m gpu tests/sm90``.
"""
from __future__ import annotations

import pytest

import gpu_kernels
import tilecraft.runtime as rt
from tilecraft.atoms import gmma_layout_atom, make_gmma_desc, wgmma_atom
from tilecraft.layout import tile_to_shape, zipped_divide
from tilecraft.runtime.tma import make_tma_descriptor, tma_args_for

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def mod():
    return rt.compile(gpu_kernels.SOURCE, arch="sm_90a", name="sm90_gpu_kernels.cu")


def _coords(args, origin, cta_rank=0):
    c = list(args.coords(origin, cta_rank))
    return c + [0] * (5 - len(c))


def _int_tensor(values):
    return torch.tensor(values, dtype=torch.int32, device="cuda")


def _layout_index(smem, tile_shape):
    """For each tile element (row-major over tile_shape), its element offset in the shared-memory image."""
    rows, cols = tile_shape
    return torch.tensor([smem(i, j) for i in range(rows) for j in range(cols)], dtype=torch.long, device="cuda")


def _expected_tile(src, origin, tile_shape):
    """src[origin : origin + tile] with zeros where the tile leaves the tensor (TMA's zero fill)."""
    out = torch.zeros(tile_shape, dtype=src.dtype, device=src.device)
    part = src[origin[0]: origin[0] + tile_shape[0], origin[1]: origin[1] + tile_shape[1]]
    out[: part.shape[0], : part.shape[1]] = part
    return out


def _bits(t):
    """The tensor's bits as integers of its width (NaN-proof exact comparison of any element type)."""
    return t.contiguous().view({1: torch.uint8, 2: torch.int16, 4: torch.int32}[t.element_size()])


def _random(shape, dtype, *, transposed=False):
    """A random tensor of `shape`; with transposed, stored column-major (dimension 0 contiguous)."""
    store = tuple(reversed(shape)) if transposed else shape
    if dtype in ("e4m3", "u8"):
        t = torch.randint(0, 256, store, dtype=torch.uint8, device="cuda")
    else:
        t = torch.randn(store, device="cuda").to(dtype)
    return t.t() if transposed else t


LOADS = [  # (element type, swizzle, major, tile (rows, cols), tensor shape, origin)
    (torch.float16, 128, "K", (64, 64), (200, 192), (128, 128)),       # 2-D, last row tile ragged
    (torch.float16, 128, "K", (128, 128), (256, 256), (128, 128)),     # K splits: 3-D map
    (torch.bfloat16, 64, "K", (64, 32), (128, 96), (64, 64)),
    (torch.float32, 32, "K", (32, 8), (64, 40), (32, 32)),             # tf32-style rows of 8 floats
    ("e4m3", 128, "K", (64, 128), (128, 256), (64, 128)),
    (torch.float16, 0, "K", (64, 16), (128, 64), (64, 48)),            # no swizzle, core matrices: 3-D
    (torch.float16, 128, "MN", (128, 16), (256, 64), (128, 32)),       # MN-major: 4-D map
]


@pytest.mark.parametrize("dtype, sw, major, tile, shape, origin", LOADS)
def test_tma_load_lands_where_the_layout_says(mod, dtype, sw, major, tile, shape, origin):
    elem = "e4m3" if dtype == "e4m3" else {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}[dtype]
    smem = tile_to_shape(gmma_layout_atom(major, sw, elem), tile)
    src = _random(shape, dtype, transposed=(major == "MN"))
    kw = {"dtype": "e4m3"} if dtype == "e4m3" else {}
    args = tma_args_for(src, smem, **kw)
    tmap = make_tma_descriptor(src, smem, **kw)
    image = torch.zeros(args.box_bytes, dtype=torch.uint8, device="cuda")
    mod.kernel("tma_load_image")(tmap, image, args.box_bytes, args.rank, _int_tensor(_coords(args, origin)),
                                 grid=1, block=128, smem=args.box_bytes + 1024, sync=True)
    elems = _bits(image.view(src.dtype)).view(-1)
    got = elems[_layout_index(smem, tile)].view(tile)
    assert torch.equal(got, _bits(_expected_tile(src, origin, tile)))


def test_tma_load_batched_3d(mod):
    smem = tile_to_shape(gmma_layout_atom("K", 128, "f16"), (64, 64))
    src = torch.randn(3, 128, 128, device="cuda").half().permute(1, 2, 0)  # (M, K, L) view, L outermost
    args = tma_args_for(src, smem)
    assert args.rank == 3
    image = torch.zeros(args.box_bytes, dtype=torch.uint8, device="cuda")
    mod.kernel("tma_load_image")(make_tma_descriptor(src, smem), image, args.box_bytes, 3,
                                 _int_tensor(_coords(args, (64, 0, 2))), grid=1, block=128,
                                 smem=args.box_bytes + 1024, sync=True)
    got = image.view(torch.float16)[_layout_index(smem, (64, 64))].view(64, 64)
    assert torch.equal(got, src[64:128, 0:64, 2])


@pytest.mark.parametrize("sw, major, tile, shape, origin", [
    (128, "K", (64, 64), (192, 128), (128, 64)),
    (128, "K", (128, 128), (256, 256), (128, 0)),
    (64, "MN", (64, 32), (128, 64), (64, 32)),
])
def test_tma_store_round_trip(mod, sw, major, tile, shape, origin):
    smem = tile_to_shape(gmma_layout_atom(major, sw, "f16"), tile)
    src = _random(shape, torch.float16, transposed=(major == "MN"))
    dst = torch.zeros_like(src)  # same strides as src (zeros_like keeps a transposed view's layout)
    args = tma_args_for(src, smem)
    mod.kernel("tma_negate_roundtrip")(make_tma_descriptor(src, smem), make_tma_descriptor(dst, smem),
                                       args.box_bytes, args.rank, _int_tensor(_coords(args, origin)),
                                       grid=1, block=128, smem=args.box_bytes + 1024, sync=True)
    window = (slice(origin[0], origin[0] + tile[0]), slice(origin[1], origin[1] + tile[1]))
    expected = torch.zeros_like(src)
    expected[window] = -src[window]
    assert torch.equal(dst, expected)  # the tile, negated, and nothing outside it


@pytest.mark.parametrize("sw, k, b_major", [(128, 64, "K"), (64, 32, "K"), (32, 16, "K"), (128, 64, "MN"),
                                            (32, 16, "MN")])
def test_wgmma_m64n128k16_on_tma_tiles(mod, sw, k, b_major):
    torch.manual_seed(0)
    a = torch.randn(64, k, device="cuda").half()                               # (M, K), K-major
    b = _random((128, k), torch.float16, transposed=(b_major == "MN"))         # (N, K)
    sA = tile_to_shape(gmma_layout_atom("K", sw, "f16"), (64, k))
    sB = tile_to_shape(gmma_layout_atom(b_major, sw, "f16"), (128, k))
    args_a, args_b = tma_args_for(a, sA), tma_args_for(b, sB)
    kblocks = k // 16

    def descs(s, mn, major):
        blocks = zipped_divide(s, (mn, 16))
        vals = [make_gmma_desc(blocks(None, (0, kb))[0], major, "f16").value for kb in range(kblocks)]
        return torch.tensor([v - (1 << 64) if v >= 1 << 63 else v for v in vals], dtype=torch.int64, device="cuda")

    out = torch.zeros(128 * 64, device="cuda")
    coords = _int_tensor([args_a.rank] + _coords(args_a, (0, 0)) + [args_b.rank] + _coords(args_b, (0, 0)))
    smem = ((args_a.box_bytes + 1023) // 1024) * 1024 + args_b.box_bytes + 1024
    mod.kernel("wgmma_m64n128_f16")(make_tma_descriptor(a, sA), make_tma_descriptor(b, sB), descs(sA, 64, "K"),
                                    descs(sB, 128, b_major), kblocks, int(b_major == "MN"), args_a.box_bytes,
                                    args_b.box_bytes, coords, out, grid=1, block=128, smem=smem, sync=True)
    # thread t's accumulator v is C[m, n] at index m + 64 n of the atom's C layout
    c_tv = wgmma_atom(128).layout_c_tv
    index = torch.tensor([c_tv(t, v) for t in range(128) for v in range(64)], device="cuda")
    c = torch.zeros(64 * 128, device="cuda")
    c[index] = out
    got = c.view(128, 64).t()
    want = a.double() @ b.double().t()
    torch.testing.assert_close(got.double(), want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("ctas", [2])
def test_tma_multicast_in_a_cluster(mod, ctas):
    tile = (128, 64)
    smem = tile_to_shape(gmma_layout_atom("K", 128, "f16"), tile)
    src = torch.randn(256, 192, device="cuda").half()
    origin = (128, 64)
    args = tma_args_for(src, smem, multicast=ctas)
    assert args.tile_bytes == 128 * 64 * 2 and args.box_bytes == args.tile_bytes // ctas
    coords = _int_tensor([x for r in range(ctas) for x in _coords(args, origin, r)])
    images = torch.zeros(ctas, args.tile_bytes, dtype=torch.uint8, device="cuda")
    mod.kernel("tma_multicast_image")(make_tma_descriptor(src, smem, multicast=ctas), images, args.tile_bytes,
                                      args.box_bytes, args.rank, coords, grid=ctas, block=128,
                                      cluster=(ctas, 1, 1), smem=args.tile_bytes + 1024, sync=True)
    index = _layout_index(smem, tile)
    want = src[origin[0]: origin[0] + tile[0], origin[1]: origin[1] + tile[1]]
    for r in range(ctas):
        assert torch.equal(images[r].view(torch.float16)[index].view(tile), want), f"CTA {r}"

