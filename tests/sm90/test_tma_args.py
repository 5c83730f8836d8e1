"""tma_encode_args on the CPU: a model of what TMA does with the arguments (dense box, address-bit
swizzle, strided global addressing, bounds) must put every tile element exactly where the
shared-memory layout says, read it from where the tensor has it, and agree on what is out of bounds."""
from __future__ import annotations

import itertools
import random

import pytest

from tilecraft.atoms import gmma_layout_atom, make_gmma_desc
from tilecraft.layout import ComposedLayout, Layout, Swizzle, tile_to_shape, zipped_divide
from tilecraft.runtime.tma import TMA_DTYPES, TmaEncodeArgs, tma_encode_args


def tma_swizzle(addr: int, span: int) -> int:
    """TMA's swizzle of a shared-memory byte address: the 16-byte chunk index within the span is XORed
    with the address bits just above 128 bytes (the pattern repeats every 8 spans)."""
    if span == 0:
        return addr
    bits = (span // 16).bit_length() - 1
    return addr ^ (((addr >> 7) & ((1 << bits) - 1)) << 4)


def simulate(args: TmaEncodeArgs, origin, strides, shape, cta_rank: int = 0):
    """Run one TMA copy in the model; return {smem byte offset: tile coordinate of the element there},
    checking on the way that the global address is the tensor's and that out-of-bounds agrees."""
    out = {}
    base, coords = args.coords(origin), args.coords(origin, cta_rank)
    gstrides = (args.element_bytes,) + args.global_strides
    for idx in itertools.product(*(range(b) for b in args.box_dims)):
        lin, acc = 0, 1
        for i, b in zip(idx, args.box_dims):
            lin += i * acc
            acc *= b
        smem = tma_swizzle(cta_rank * args.box_bytes + lin * args.element_bytes, args.swizzle_bytes)
        g = [c + i for c, i in zip(coords, idx)]
        tile = [0] * len(shape)
        for d, gj, bj in zip(args.dims, g, base):
            tile[d.tensor_dim] += (gj - bj) * d.step
        absolute = [o + t for o, t in zip(origin, tile)]
        inside = all(0 <= x < n for x, n in zip(g, args.global_dims))
        assert inside == all(a < n for a, n in zip(absolute, shape)), (absolute, g)
        if inside:
            gaddr = sum(x * s for x, s in zip(g, gstrides))
            assert gaddr == args.element_bytes * sum(a * s for a, s in zip(absolute, strides))
        out[smem] = tuple(tile)
    return out


def check(shape, strides, dtype, smem, tile_shape, origins, **kw):
    """Encode, then check for each tile origin that every tile element lands once, where `smem` says."""
    args = tma_encode_args(shape, strides, dtype, smem, **kw)
    esize = TMA_DTYPES[dtype][0]
    for origin in origins:
        placed = {}
        for r in range(args.multicast):
            got = simulate(args, origin, strides, shape, r)
            assert not set(got) & set(placed), "two slices write the same bytes"
            placed.update(got)
        assert len(placed) == args.tile_bytes // esize
        for addr, tile in placed.items():
            assert all(x == 0 for x in tile[len(tile_shape):])  # untiled dimensions: one element
            assert addr == smem(*tile[: len(tile_shape)]) * esize, (tile, addr)
    return args


def _origins(shape, tile_shape, n=2, seed=0):
    rnd = random.Random(seed)
    tiles = [max(1, -(-s // t)) for s, t in zip(shape, tile_shape)] + [s for s in shape[len(tile_shape):]]
    steps = list(tile_shape) + [1] * (len(shape) - len(tile_shape))
    corners = [tuple((n - 1) * st for n, st in zip(tiles, steps)), tuple(0 for _ in shape)]
    return corners + [tuple(rnd.randrange(n) * st for n, st in zip(tiles, steps)) for _ in range(n)]


K_MAJOR = [  # (dtype, swizzle bytes, tile (MN, K)): K-major operand tiles as a GEMM stages them
    ("f16", 128, (64, 64)), ("f16", 128, (128, 64)), ("bf16", 128, (128, 128)), ("f16", 64, (64, 32)),
    ("f16", 64, (128, 64)), ("f16", 32, (64, 16)), ("f16", 32, (64, 48)), ("e4m3", 128, (128, 128)),
    ("e5m2", 128, (64, 256)), ("e4m3", 64, (64, 64)), ("tf32", 128, (64, 32)), ("f32", 32, (8, 8)),
    ("f16", 0, (64, 16)), ("e4m3", 0, (64, 64)),
]


@pytest.mark.parametrize("dtype, sw, tile", K_MAJOR)
def test_k_major_tiles_land_where_the_layout_says(dtype, sw, tile):
    smem = tile_to_shape(gmma_layout_atom("K", sw, dtype), tile)
    shape = (3 * tile[0] + tile[0] // 2, 4 * tile[1])  # ragged M: the last tile reads out of bounds
    args = check(shape, (shape[1], 1), dtype, smem, tile, _origins(shape, tile))
    esize = TMA_DTYPES[dtype][0]
    assert args.box_bytes == tile[0] * tile[1] * esize
    assert args.swizzle == f"CU_TENSOR_MAP_SWIZZLE_{sw}B" if sw else args.swizzle.endswith("NONE")
    assert args.box_dims[0] * esize == (sw or 16)  # one swizzle row (or one 16-byte core-matrix row)


MN_MAJOR = [("f16", 128, (128, 16)), ("f16", 128, (64, 64)), ("bf16", 64, (64, 32)), ("f16", 32, (32, 16)),
            ("f16", 128, (256, 16))]


@pytest.mark.parametrize("dtype, sw, tile", MN_MAJOR)
def test_mn_major_tiles_land_where_the_layout_says(dtype, sw, tile):
    smem = tile_to_shape(gmma_layout_atom("MN", sw, dtype), tile)
    shape = (4 * tile[0], 2 * tile[1] + 8)
    check(shape, (1, shape[0]), dtype, smem, tile, _origins(shape, tile))
    k = 32 // TMA_DTYPES[dtype][0]  # one wgmma's K: 32 bytes
    make_gmma_desc(zipped_divide(smem, (tile[0], k))(None, (0, 0))[0], "MN", dtype)  # the layout wgmma reads


def test_k_major_sw128_128_halves_is_a_3d_map():
    smem = tile_to_shape(gmma_layout_atom("K", 128, "f16"), (128, 128))
    a = tma_encode_args((512, 1024), (1024, 1), "f16", smem, address=0x7F0000000000)
    # K splits into 64 halves (one swizzle row) x 2; the second K piece strides 64 elements
    assert a.global_dims == (64, 512, 16) and a.box_dims == (64, 128, 2)
    assert a.global_strides == (2048, 128)
    assert a.coords((128, 256)) == (0, 128, 4)
    assert a.smem_alignment == 1024 and a.box_bytes == 32768


def test_batched_tensor_gets_a_box_of_one_per_batch():
    smem = tile_to_shape(gmma_layout_atom("K", 128, "f16"), (64, 64))
    shape, strides = (128, 192, 5), (192, 1, 128 * 192)  # (M, K, L), batch outermost
    a = check(shape, strides, "f16", smem, (64, 64), [(0, 0, 0), (64, 128, 4), (64, 64, 2)])
    assert a.rank == 3 and a.box_dims == (64, 64, 1) and a.global_dims == (192, 128, 5)
    assert a.coords((64, 128, 4)) == (128, 64, 4)


def test_box_shape_form_is_dense_in_stride_order():
    a = tma_encode_args((100, 96), (96, 1), "f16", (32, 64), swizzle=128)
    assert (a.global_dims, a.box_dims, a.global_strides) == ((96, 100), (64, 32), (192,))
    same = tma_encode_args((100, 96), (96, 1), "f16", ComposedLayout(Swizzle(3, 3, 3), 0, Layout((32, 64), (64, 1))))
    assert same == a
    # a narrower box row than the span is the driver's to accept when no layout claims otherwise
    assert tma_encode_args((100, 96), (96, 1), "f16", (32, 32), swizzle=128).box_dims == (32, 32)
    # column-major tensor: the box's first extent is the contiguous one
    c = tma_encode_args((64, 100), (1, 64), "f32", (16, 8))
    assert (c.global_dims, c.box_dims, c.global_strides) == ((64, 100), (16, 8), (256,))


@pytest.mark.parametrize("k", [2, 4])
def test_multicast_slices_tile_the_buffer(k):
    smem = tile_to_shape(gmma_layout_atom("K", 128, "f16"), (128, 64))
    shape = (512, 256)
    a = check(shape, (256, 1), "f16", smem, (128, 64), _origins(shape, (128, 64)), multicast=k)
    assert a.box_dims == (64, 128 // k) and a.tile_bytes == 128 * 64 * 2 and a.multicast_dim == 1
    assert a.coords((256, 64), k - 1) == (64, 256 + (k - 1) * 128 // k)


def test_multicast_splits_the_outermost_non_trivial_dimension():
    smem = tile_to_shape(gmma_layout_atom("K", 128, "f16"), (64, 128))  # 3-D: (64 K, 64 M, 2 K)
    a = tma_encode_args((256, 256, 3), (256, 1, 65536), "f16", smem, multicast=2)
    assert a.box_dims == (64, 64, 1, 1) and a.multicast_dim == 2
    assert a.coords((64, 128, 2), 1) == (0, 64, 3, 2)


def test_multicast_of_three_mn_blocks_splits_k():
    """The Hopper GEMM's 192-column MN-major B stage (sm90.smem_layout): three 64-column blocks do not halve,
    so the k-groups are outermost and each CTA of a 2x1 cluster loads 32 of the 64 k for all three blocks;
    every element lands where the layout says (the kernel's descriptors derive from the same layout: the
    compile tests of the 192-column tilings in test_gemm_sm90.py trace them)."""
    from tilecraft import dsl
    from tilecraft.gemm.sm90 import smem_layout
    smem = smem_layout(dsl.bfloat16, "MN", 192, 64, 1)(None, None, 0)
    shape = (960, 512)                                            # (N, K), N contiguous
    a = check(shape, (1, 960), "bf16", smem, (192, 64), _origins(shape, (192, 64)), multicast=2)
    assert a.box_dims == (64, 8, 3, 4) and a.multicast_dim == 3 and a.tile_bytes == 192 * 64 * 2


def test_enums_and_options():
    smem = tile_to_shape(gmma_layout_atom("K", 64, "bf16"), (64, 32))
    a = tma_encode_args((64, 64), (64, 1), "bf16", smem, oob_fill="nan", l2_promotion=128)
    assert a.data_type == "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16" and a.swizzle == "CU_TENSOR_MAP_SWIZZLE_64B"
    assert a.oob_fill == "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA"
    assert a.l2_promotion == "CU_TENSOR_MAP_L2_PROMOTION_L2_128B"
    assert a.interleave == "CU_TENSOR_MAP_INTERLEAVE_NONE" and a.element_strides == (1, 1)
    for name, dt in [("e4m3", "UINT8"), ("s8", "UINT8"), ("f32", "FLOAT32"), ("tf32", "TFLOAT32"),
                     ("s32", "INT32"), ("f64", "FLOAT64")]:
        assert TMA_DTYPES[name][1] == dt
    # torch dtypes are recognized by name, without importing torch here
    class FakeDtype:
        def __str__(self):
            return "torch.float8_e4m3fn"
    assert tma_encode_args((64, 64), (64, 1), FakeDtype(), (64, 64)).data_type.endswith("UINT8")


def test_every_enum_name_is_the_drivers():
    """The names tma_encode_args produces are members of cuda.bindings' enums (where installed)."""
    d = pytest.importorskip("cuda.bindings.driver")
    for sw, dtype, oob, l2 in [(128, "f16", "zero", 256), (64, "bf16", "nan", 128), (32, "e4m3", "zero", 64),
                              (0, "f32", "zero", 0), (0, "s32", "zero", 256), (0, "tf32", "zero", 256),
                              (0, "u16", "zero", 256), (0, "s64", "zero", 256), (0, "f64", "zero", 256)]:
        box = (64, 128 // TMA_DTYPES[dtype][0] if sw == 0 else sw // TMA_DTYPES[dtype][0])
        a = tma_encode_args((64, 256), (256, 1), dtype, box, swizzle=sw, oob_fill=oob, l2_promotion=l2)
        getattr(d.CUtensorMapDataType, a.data_type)
        getattr(d.CUtensorMapSwizzle, a.swizzle)
        getattr(d.CUtensorMapInterleave, a.interleave)
        getattr(d.CUtensorMapL2promotion, a.l2_promotion)
        getattr(d.CUtensorMapFloatOOBfill, a.oob_fill)


# ----------------------------------------------------------------------------- what TMA cannot do

SW128 = tile_to_shape(gmma_layout_atom("K", 128, "f16"), (64, 64))


@pytest.mark.parametrize("call, match", [
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", SW128, address=8), "16-byte aligned"),
    (lambda: tma_encode_args((64, 60), (60, 1), "f16", SW128), "multiples of 16"),  # row pitch 120 bytes
    (lambda: tma_encode_args((64, 64), (64, 1), "c64", SW128), "unsupported element type"),
    (lambda: tma_encode_args((64, 64), (64, 1), "bool", SW128), "unsupported element type"),
    (lambda: tma_encode_args((64, 64), (1, 64), "f16", SW128), "cannot transpose"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", SW128, swizzle=64), "disagrees"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", Layout((64, 64), (64, 1)), swizzle=128), "not swizzled"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", (64, 128), swizzle=128), "wider than the 128-byte"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", (64, 4)), "multiple of 16 bytes"),  # 8-byte rows
    (lambda: tma_encode_args((512, 512), (512, 1), "f32", (512, 4)), "exceeds 256"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", Layout((64, 64), (128, 1))), "not a dense box"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", Layout((64, 64), (0, 1))), "not a dense box"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", ComposedLayout(Swizzle(3, 3, 4), 0, Layout((64, 64), (64, 1)))),
     "not a TMA swizzle"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 32), (32, 1)))),
     "exactly the 128-byte swizzle span"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", ComposedLayout(Swizzle(3, 3, 3), 64, Layout((8, 64), (64, 1)))),
     "starts at offset"),
    (lambda: tma_encode_args((64, 100), (128, 1), "f16", tile_to_shape(gmma_layout_atom("K", 128, "f16"), (64, 128))),
     "multiple of 64"),  # K split into 64 x 2 needs K % 64 == 0
    (lambda: tma_encode_args((2, 2, 2, 2, 2, 2), (32, 16, 8, 4, 2, 1), "f16", (8,)), "1 to 5 dimensions"),
    (lambda: tma_encode_args((256, 256, 2, 2), (1, 256, 65536, 131072), "f16",
                             tile_to_shape(gmma_layout_atom("MN", 128, "f16"), (128, 16))), "at most 5"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", Layout((64, 64, 2), (64, 1, 4096))), "has 3 modes"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", SW128, multicast=3), "does not split"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", tile_to_shape(gmma_layout_atom("K", 128, "f16"), (8, 64)),
                             multicast=2), "multiple of 1024"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", SW128, multicast=0), "multicast must be"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", SW128, oob_fill="inf"), "oob_fill"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", SW128, l2_promotion=32), "l2_promotion"),
    (lambda: tma_encode_args((64, 64), (64, 1), "f16", (64, 64), swizzle=16), "swizzle must be"),
    (lambda: tma_encode_args((64, 0), (64, 1), "f16", (64, 64)), "extent"),
    (lambda: tma_encode_args((64, 64), (64, -1), "f16", (64, 64)), "non-negative"),
    (lambda: tma_encode_args((1 << 41, 64), (64, 1), "f16", (8, 64)), "2\\^32"),
    (lambda: tma_encode_args((64, 64), (1 << 40, 1), "f16", (8, 64)), "2\\^40"),
])
def test_errors_name_the_rule(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_descriptor_refuses_host_tensors():
    torch = pytest.importorskip("torch")
    from tilecraft.runtime.tma import make_tma_descriptor

    with pytest.raises(ValueError, match="CUDA torch tensor"):
        make_tma_descriptor(torch.zeros(64, 64, dtype=torch.float16), (64, 64), swizzle=128)


def test_torch_tensor_arguments():
    torch = pytest.importorskip("torch")
    from tilecraft.runtime.tma import tma_args_for

    t = torch.zeros(3, 128, 96, dtype=torch.bfloat16).permute(1, 2, 0)  # (M, K, L) with L outermost
    a = tma_args_for(t, tile_to_shape(gmma_layout_atom("K", 64, "bf16"), (64, 32)))
    assert a.global_address == t.data_ptr() and a.data_type.endswith("BFLOAT16")
    assert (a.global_dims, a.box_dims, a.global_strides) == ((96, 128, 3), (32, 64, 1), (192, 128 * 96 * 2))
    assert tma_args_for(t.view(torch.int16), (64, 32), dtype="bf16", swizzle=64).data_type.endswith("BFLOAT16")


def test_cuda_stays_unimported():
    import subprocess
    import sys

    code = ("import sys, tilecraft.runtime.tma as t; from tilecraft.layout import *;"
            "t.tma_encode_args((64, 64), (64, 1), 'f16', (64, 64), swizzle=128);"
            "print(any(m.startswith(('cuda', 'torch')) for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


@pytest.mark.parametrize("major, mn", [("K", 128), ("MN", 128), ("K", 64), ("MN", 256)])
def test_multicast_halves_of_the_gemm_stages(major, mn):
    """A 2x1 / 1x2 / 2x2 cluster of the Hopper GEMM multicasts half of each A (or B) stage from each of two CTAs
    (sm90.smem_layout, both majors): every element of the stage lands once, where the layout says."""
    from tilecraft import dsl
    from tilecraft.gemm.sm90 import smem_layout
    smem = smem_layout(dsl.bfloat16, major, mn, 64, 1)(None, None, 0)
    shape = (5 * mn // 2, 320)                                    # (MN, K): the last MN tile is ragged
    strides = (320, 1) if major == "K" else (1, 5 * mn // 2)
    a = check(shape, strides, "bf16", smem, (mn, 64), _origins(shape, (mn, 64)), multicast=2)
    assert a.tile_bytes == mn * 64 * 2 and a.box_bytes == a.tile_bytes // 2
