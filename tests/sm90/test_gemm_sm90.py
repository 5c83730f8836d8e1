"""The Hopper GEMM (tilecraft/gemm/sm90.py): every configuration compiles for sm_90a with HGMMA in its
SASS and no spills; the kernel language's Hopper constructs refuse misuse; on an H100/H200 the kernel
matches float64 for ragged shapes, all majors, batch and every epilogue (GPU tests)."""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tilecraft.runtime as rt  # noqa: E402
from tilecraft import dsl  # noqa: E402
from tilecraft.gemm import SM90_TABLE, GemmOp, Sm90Config, pick_sm90_config  # noqa: E402
from tilecraft.gemm import op as op_module  # noqa: E402
from tilecraft.gemm.op import clear_plans  # noqa: E402
from tilecraft.gemm import sm90  # noqa: E402
from tilecraft.gemm.tensorop import EpilogueSpec  # noqa: E402

_DT = {"float16": torch.float16, "bfloat16": torch.bfloat16}
#: 192x192, three consumer warpgroups of 64 rows: 512 threads launch at 128 registers, the producer keeps 24
THREE_CONSUMERS = Sm90Config(192, 192, 64, 3, consumers=3, producer_regs=24, consumer_regs=160)


def _operands(L, M, N, K, majors, dtype):
    A = torch.empty(L, M, K, dtype=dtype)
    if majors[0] == "M":
        A = A.transpose(1, 2).contiguous().transpose(1, 2)
    Bt = torch.empty(L, N, K, dtype=dtype)
    if majors[1] == "N":
        Bt = Bt.transpose(1, 2).contiguous().transpose(1, 2)
    return A, Bt


def _compile(cfg, elem, majors=("K", "K"), ep=EpilogueSpec(), full=True, out=None, L=1):
    dt = _DT[elem]
    A, Bt = _operands(L, 256, 256, 256, majors, dt)
    D = torch.empty(L, 256, 256, dtype=out or dt)
    C = torch.empty(L, 256, 256, dtype=dt) if ep.read_c else None
    bias = torch.empty(256, dtype=dt) if ep.bias != "none" else None
    tmA, tmB = sm90.make_maps(A, Bt, cfg, elem)
    args = (tmA, tmB, C, D, bias, np.float32(1), np.float32(0), 256, None, cfg, elem, sm90.operand_majors(A, Bt), ep,
            full, sm90.d_map(D, cfg))
    return sm90.sm90_gemm_kernel, args


@pytest.mark.parametrize("cfg", list(SM90_TABLE.values()), ids=lambda c: c.name)
@pytest.mark.parametrize("elem", ["float16", "bfloat16"])
def test_table_compiles_with_hgmma_and_no_spills(cfg, elem):
    kern, args = _compile(cfg, elem)
    k = kern.compile(*args, arch="sm_90a")
    r = k.resources
    assert r.spill_store_bytes == 0 and r.stack_frame_bytes == 0, r
    assert "serialized" not in k.module.log, k.module.log  # ptxas did not serialize the wgmmas
    src = kern.source(*args)
    assert f"wgmma_m64n{cfg.blk_n}k16_f32_{sm90.ELEMENTS[elem][1]}" in src
    if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
        text = rt.sass(k.module.cubin)
        assert "HGMMA" in text and "UTMALDG" in text and "SYNCS" in text
    else:
        assert "wgmma.mma_async" in rt.compile_ptx(src, arch="sm_90a")


@pytest.mark.parametrize("majors", [("K", "K"), ("M", "K"), ("K", "N"), ("M", "N")])
def test_all_majors_and_full_epilogue_compile(majors):
    ep = EpilogueSpec(read_c=True, unit_alpha=False, bias="n", activation="gelu")
    kern, args = _compile(Sm90Config(), "bfloat16", majors, ep, full=False, out=torch.float32, L=2)
    k = kern.compile(*args, arch="sm_90a")
    assert k.resources.spill_store_bytes == 0
    src = kern.source(*args)
    trans = f"<{int(majors[0] == 'M')}, {int(majors[1] == 'N')}>"
    assert f"_ss{trans}(" in src                                   # the transpose bits follow the majors
    assert "tc::tma_load_" in src and "tc::setmaxnreg_inc<232>" in src


@pytest.mark.parametrize("majors, steps", [(("K", "K"), (2, 2)), (("M", "N"), (128, 128)), (("M", "K"), (128, 2))])
def test_k_block_descriptors_step_from_the_first(majors, steps):
    """A k-tile's wgmmas take k-block 0's descriptors plus each k-block's distance in 16-byte units: 16
    K-major bf16 columns are 32 bytes (2 units); 16 MN-major rows of a 128-byte swizzle are 2048 bytes (128)."""
    kern, args = _compile(Sm90Config(128, 256, 64, 4), "bfloat16", majors)
    calls = [line for line in kern.source(*args).splitlines() if "wgmma_m64n256k16" in line][:4]
    for kb, line in enumerate(calls):
        a, b = re.findall(r"tc::gmma_desc\(tc::smem_u32\((s[AB][^)]*)\), 0x[0-9a-f]+ull\)(?: \+ (\d+)ull)?", line)
        assert (int(a[1] or 0), int(b[1] or 0)) == (kb * steps[0], kb * steps[1]), line
        assert a[0] == "sA + stage_1 * 8192 + cw * 4096" and b[0] == "sB + stage_1 * 16384"   # one base per k-tile


@pytest.mark.parametrize("cfg", [Sm90Config(128, 192, 64, 4), Sm90Config(64, 192, 64, 6, consumers=1), THREE_CONSUMERS,
                                 replace(THREE_CONSUMERS, blk_n=128, stages=4, cluster_m=2),
                                 replace(THREE_CONSUMERS, cluster_m=2), Sm90Config(128, 192, 64, 4, cluster_m=2)],
                         ids=lambda c: c.name)
@pytest.mark.parametrize("majors", [("K", "N"), ("M", "K")])
@pytest.mark.parametrize("full_epilogue", [False, True])
def test_192_wide_and_three_consumer_tilings_compile(cfg, majors, full_epilogue):
    """N = 192 (three 64-column boxes of an N-major B) and three consumer warpgroups (192 rows, 512 threads at
    128 registers; setmaxnreg gives each consumer 160): HGMMA, no serialized wgmma, no spills with the plain
    epilogue. With C, bias and gelu, 192x192's 96 accumulators spill a few words at 24/160 registers (ptxas
    allocates by the setmaxnreg split: 8 bytes at 40/152, none at 56/144, 108 at 64/136)."""
    ep = EpilogueSpec(read_c=True, unit_alpha=False, bias="n", activation="gelu") if full_epilogue else EpilogueSpec()
    kern, args = _compile(cfg, "bfloat16", majors, ep, full=not full_epilogue)
    k = kern.compile(*args, arch="sm_90a")
    most = 16 if full_epilogue and cfg.consumers == 3 and cfg.blk_n == 192 else 0
    assert k.resources.spill_store_bytes <= most and k.resources.stack_frame_bytes <= most, k.resources
    assert "serialized" not in k.module.log, k.module.log
    src = kern.source(*args)
    assert f"wgmma_m64n{cfg.blk_n}k16_f32_bf16" in src
    assert f"tc::setmaxnreg_inc<{cfg.consumer_regs}>" in src and f"tc::setmaxnreg_dec<{cfg.producer_regs}>" in src


def test_maps_and_descriptors_share_the_smem_layout():
    """The TMA map of each operand is encoded from the stage layout the kernel's descriptors read, and a
    tile of another layout is refused at trace time."""
    cfg = Sm90Config(128, 128, 64, stages=3)
    A, Bt = _operands(1, 256, 256, 256, ("M", "K"), torch.float16)
    tmA, tmB = sm90.make_maps(A, Bt, cfg, "float16")
    assert tmA.smem == sm90.smem_layout(dsl.float16, "M", 128, 64, 3)(None, None, 0)
    assert tmA.args.box_bytes == 128 * 64 * 2 and tmA.args.swizzle_bytes == 128
    assert tmB.args.box_dims[:2] == (64, 128)                     # K innermost: 128-byte rows

    @dsl.kernel
    def wrong_tile(tm):
        s = dsl.smem_tensor(dsl.float16, sm90.smem_layout(dsl.float16, "K", 128, 64, 1)(None, None, 0), align=1024)
        bars = dsl.hopper.mbarriers(1)
        dsl.hopper.tma_load(tm, s, bars.addr(0), (0, 0, 0))

    with pytest.raises(dsl.TraceError, match="not the layout the map was made for"):
        wrong_tile.source(tmA)


def test_tma_prefetch_asks_l2_for_the_maps_box():
    """hopper.tma_prefetch_tile: a cp.async.bulk.prefetch.tensor of the box tma_load would copy (its slice of a
    multicast map's box offset by cta_rank along the split dimension), with no shared memory or barrier; ptxas
    takes it (UTMAPF in the SASS where a disassembler is present)."""
    A, Bt = _operands(1, 256, 256, 256, ("K", "K"), torch.bfloat16)
    tmA, _ = sm90.make_maps(A, Bt, Sm90Config(128, 128, 64, stages=3), "bfloat16")
    tmM, _ = sm90.make_maps(A, Bt, Sm90Config(128, 64, 64, stages=3, cluster_n=2), "bfloat16")   # A's halves

    @dsl.kernel
    def prefetch(tm, k):
        dsl.hopper.tma_prefetch_tile(tm, (128, 64 * k, 0), cta_rank=1)

    src = prefetch.source(tmA, 3)
    assert "tc::tma_prefetch_3d(&tm, k * 64, 128, 0);" in src                 # (K innermost: the map's order)
    assert tmM.args.multicast == 2 and tmM.args.box_dims[1] == 64            # 64 of the tile's 128 rows each
    assert "tc::tma_prefetch_3d(&tm, k * 64, 192, 0);" in prefetch.source(tmM, 3)   # rank 1's half

    @dsl.kernel
    def no_rank(tm):
        dsl.hopper.tma_prefetch_tile(tm, (0, 0, 0))

    assert "tc::tma_prefetch_3d(&tm, 0, 0, 0);" in no_rank.source(tmA)
    with pytest.raises(dsl.TraceError, match="pass this CTA's cta_rank"):
        no_rank.source(tmM)                                             # which slice: as tma_load, it must be said
    k = prefetch.compile(tmA, 3, arch="sm_90a")
    if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
        assert "UTMAPF" in rt.sass(k.module.cubin)
    else:
        assert "cp.async.bulk.prefetch.tensor.3d.L2.global.tile" in rt.compile_ptx(src, arch="sm_90a")


@pytest.mark.parametrize("M,N,K,pick", [(4000, 1000, 4000, "sm90_128x256x64_s4_c2_cl2x1"),
                                        (3000, 2000, 1000, "sm90_128x256x64_s4_c2_cl2x1"),
                                        (2048, 1000, 4096, "sm90_128x128x64_s6_c2_cl2x1"),   # 64 tiles of 128x256
                                        (1000, 1000, 1000, "sm90_128x128x64_s6_c2_cl2x1"),
                                        (100, 1000, 4096, "sm90_64x128x64_s8_c1_sk4"),        # one m-tile: the pick
                                        (256, 1000, 65536, "sm90_128x128x64_s6_c2_sk8"),      # split-K: the pick
                                        (4096, 104, 4096, "sm90_64x64x64_s8_c1"),             # narrow: the pick
                                        (333, 7000, 3000, "sm90_128x256x64_s4_c2"),           # three m-tiles
                                        (512, 1000, 1000, "sm90_64x64x64_s8_c1")])            # 32 tiles: the pick
def test_row_major_b_of_ragged_n_takes_a_2x1_multicast(M, N, K, pick):
    """tc.gemm's tiling for a row-major B whose N is no multiple of 64 (column blocks, rows off 128-byte lines): a
    2x1 cluster multicasting B's blocks, 128x256 where its tiles fill 3/4 of the SMs, else 128x128 where its tiles
    reach a quarter of them; 128x256 unclustered for three m-tiles; the pick where it splits K, has one m-tile or
    fewer tiles. TMA reads each of them."""
    A, Bt = _operands(1, M, N, K, ("K", "N"), torch.bfloat16)
    cfg = op_module._multicast_b_blocks(pick_sm90_config(M, N, K, 1, 132), M, N, 1, 132)
    assert cfg.name == pick and sm90.tma_problem(A, Bt, cfg, "bfloat16") is None


@pytest.mark.parametrize("M,N,K,pick", [(1000, 1000, 1000, "sm90_128x128x64_s6_c2"),        # for 64x128
                                        (4096, 4096, 1000, "sm90_128x256x64_s4_c2_cl2x1"),  # 512 tiles
                                        (4096, 4096, 3000, "sm90_128x256x64_s4_c2_cl2x1"),
                                        (2000, 2000, 1000, "sm90_128x256x64_s4_c2_cl2x1"),  # 128 tiles
                                        (512, 1000, 1000, "sm90_64x64x64_s8_c1"),           # 16 tiles: the pick
                                        (64, 4096, 1000, "sm90_64x64x64_s8_c1"),            # one m-tile: the pick
                                        (16384, 200, 1000, "sm90_128x256x64_s4_c2")])       # narrow: the pick
def test_k_major_rows_off_sectors_take_a_2x1_multicast(M, N, K, pick):
    """Both operands K-major with rows off 32-byte sectors (K = 1000, 3000): 128x256 in a 2x1 cluster where its tiles
    reach half of the SMs, 128x128 for the 64x128 tile, else the pick. Rows on sectors (K = 784, 2000: 1568- and
    4000-byte rows, off 128-byte lines) and aligned ones (K = 1024) keep the pick."""
    A, Bt = _operands(1, M, N, K, ("K", "K"), torch.bfloat16)
    assert op_module._k_rows_off_sectors(A) and op_module._k_rows_off_sectors(Bt)
    cfg = op_module._multicast_k_rows(pick_sm90_config(M, N, K, 1, 132), M, N, 1, 132)
    assert cfg.name == pick and sm90.tma_problem(A, Bt, cfg, "bfloat16") is None
    for k in (784, 2000, 1024):
        A, Bt = _operands(1, M, N, k, ("K", "K"), torch.bfloat16)
        assert not op_module._k_rows_off_sectors(A) and not op_module._k_rows_off_sectors(Bt)


@pytest.mark.parametrize("M,N,K,pick", [(1000, 14336, 4096, "sm90_128x256x64_s4_c2"),       # for 128x128
                                        (1000, 4096, 4096, "sm90_128x256x64_s4_c2"),        # the pick
                                        (5000, 8192, 4096, "sm90_128x256x64_s4_c2_cl2x1"),  # the pick
                                        (1000, 6144, 4096, "sm90_128x192x64_s4_c2"),        # the pick
                                        (20000, 200, 4096, "sm90_128x128x64_s6_c2")])       # narrow: the pick
def test_column_major_a_of_ragged_m_takes_128x256_for_128x128(M, N, K, pick):
    """A column-major A whose M is no multiple of 64 (column blocks): 128x256 where the pick is the unclustered
    128x128 and 128x256's tiles reach half of the SMs; otherwise the pick."""
    A, Bt = _operands(1, M, N, K, ("M", "N"), torch.bfloat16)
    cfg = op_module._bigger_tiles_for_a_blocks(pick_sm90_config(M, N, K, 1, 132), M, N, 1, 132)
    assert cfg.name == pick and sm90.tma_problem(A, Bt, cfg, "bfloat16") is None


@pytest.mark.gpu
def test_gpu_tc_gemm_k_major_rows_off_sectors(monkeypatch):
    """tc.gemm with an nn.Linear-style B (column-major, K = 1000): the bigger tiles, right against float64."""
    if not _hopper():
        pytest.skip("needs sm_90")
    from tilecraft.gemm import gemm

    seen = _watch_launches(monkeypatch, None)
    torch.manual_seed(4)
    for M, N, K in ((1000, 1000, 1000), (4096, 4096, 1000)):
        A, W = torch.randn(M, K, device="cuda").bfloat16(), torch.randn(N, K, device="cuda").bfloat16()
        ref = A.double() @ W.double().T
        assert float((gemm(A, W.T).double() - ref).norm() / ref.norm()) < 1e-2
    assert [launch.cfg.name for launch in seen] == ["sm90_128x128x64_s6_c2", "sm90_128x256x64_s4_c2_cl2x1"]
    # a weight gradient X^T @ dY with 1000 features: A column-major of ragged M, 128x256 for the pick's 128x128
    X, dY = torch.randn(4096, 1000, device="cuda").bfloat16(), torch.randn(4096, 14336, device="cuda").bfloat16()
    ref = X.double().T @ dY.double()
    assert float((gemm(X.T, dY).double() - ref).norm() / ref.norm()) < 1e-2
    assert seen[-1].cfg.name == "sm90_128x256x64_s4_c2" and seen[-1].majors == ("M", "N")


@pytest.mark.gpu
def test_gpu_tma_prefetch_tile_then_load():
    """On the GPU: a tile asked of L2 with tma_prefetch_tile, then loaded by tma_load at the same origin (and another
    box asked for that is never loaded), lands in shared memory exactly as A holds it."""
    import tilecraft as tc

    A = torch.randn(1, 256, 256, device="cuda").bfloat16()
    tmA, _ = sm90.make_maps(A, A, Sm90Config(128, 128, 64, stages=3), "bfloat16")

    @dsl.kernel
    def prefetch_then_load(tm, out):
        s = dsl.smem_tensor(dsl.bfloat16, sm90.smem_layout(dsl.bfloat16, "K", 128, 64, 1)(None, None, 0),
                            align=1024)
        bars = dsl.hopper.mbarriers(1)
        with dsl.if_(dsl.eq(dsl.threadIdx.x, 0)):
            bars.init(0, 1)
            dsl.hopper.fence_barrier_init()
        dsl.syncthreads()
        with dsl.if_(dsl.eq(dsl.threadIdx.x, 0)):
            dsl.hopper.tma_prefetch_tile(tm, (128, 64, 0))
            dsl.hopper.tma_prefetch_tile(tm, (0, 192, 0))
            bars.arrive_expect_tx(0, 128 * 64 * 2)
            dsl.hopper.tma_load(tm, s, bars.addr(0), (128, 64, 0))
        bars.wait(0, 0)
        tile = tc.local_tile(out, (128, 64), (0, 0))
        dsl.copy(s(dsl.threadIdx.x, None), tile(dsl.threadIdx.x, None))      # thread t: row t

    out = torch.zeros(128, 64, device="cuda", dtype=torch.bfloat16)
    prefetch_then_load.launch(tmA, out, grid=1, block=128)
    torch.cuda.synchronize()
    assert torch.equal(out, A[0, 128:, 64:128])


def test_tma_load_multicasts_slices_or_whole_boxes():
    """tma_load with a multicast map sends this CTA's slice (cta_rank); with a map of one CTA's box and a mask
    (cta_rank=None) the whole box, at the tile given; the other pairings are refused."""
    A, Bt = _operands(1, 256, 256, 256, ("K", "K"), torch.float16)
    whole, halves = (sm90.make_maps(A, Bt, Sm90Config(128, 128, 64, stages=3, cluster_n=n), "float16")[0]
                     for n in (1, 2))

    @dsl.kernel
    def load(tm, cta_rank: dsl.Constexpr):
        s = dsl.smem_tensor(dsl.float16, sm90.smem_layout(dsl.float16, "K", 128, 64, 1)(None, None, 0), align=1024)
        bars = dsl.hopper.mbarriers(1)
        dsl.hopper.tma_load(tm, s, bars.addr(0), (0, 64, 0), multicast=3, cta_rank=cta_rank)

    # origin (m, k, l) = (0, 64, 0): box coordinates (k, m, l)
    assert "tc::tma_load_multicast_3d(tc::smem_u32(s), &tm, tc::smem_u32(smem0), (tc::u16)(3), 64, 0, 0);" in \
        load.source(whole, None)
    assert "tc::smem_u32(s + 4096), &tm, tc::smem_u32(smem0), (tc::u16)(3), 64, 64, 0);" in \
        load.source(halves, 1)                                                  # slice 1: 64 rows further on
    with pytest.raises(dsl.TraceError, match="sends the whole box"):
        load.source(whole, 0)
    with pytest.raises(dsl.TraceError, match="pass this CTA's cta_rank"):
        load.source(halves, None)


def test_if_refuses_python_bools():
    """`x == 0` on a runtime value is a Python comparison of expressions: tc.if_ refuses the bool it makes."""
    @dsl.kernel
    def k(out):
        with dsl.if_(dsl.threadIdx.x == 0):
            out[0] = 1.0

    with pytest.raises(dsl.TraceError, match="tc.eq"):
        k.source(torch.empty(4))


def test_validate_names_the_broken_rule():
    with pytest.raises(ValueError, match="multiple of 64 rows"):
        Sm90Config(96, 128, 64).validate()
    with pytest.raises(ValueError, match="128 bytes"):
        Sm90Config(128, 128, 32).validate()
    with pytest.raises(ValueError, match="smem"):
        Sm90Config(256, 256, 64, stages=4, consumers=4).validate()
    with pytest.raises(ValueError, match="blk_n must be a multiple of 8"):
        Sm90Config(128, 44, 64, stages=8).validate()         # no wgmma N: refused here, not by NVRTC
    Sm90Config(128, 48, 64, stages=8).validate()             # the source then defines m64n48's wrappers
    with pytest.raises(ValueError, match="clusters up to 2x2"):
        Sm90Config(cluster_n=4).validate()
    # a 96-wide tile of an N-major B does not split into 64-element swizzle columns: the host says so (tc.gemm
    # then takes the sm80 path) instead of the layout algebra failing inside the launch
    A, Bt = _operands(1, 256, 384, 256, ("K", "N"), torch.float16)
    why = sm90.tma_problem(A, Bt, Sm90Config(128, 96, 64, stages=6), "float16")
    assert why is not None and why.startswith("B: an MN-major operand") and "got 96" in why, why
    assert sm90.tma_problem(A, Bt, Sm90Config(128, 64, 64, stages=8), "float16") is None
    A, Bt = _operands(1, 256, 384, 256, ("K", "K"), torch.float16)
    assert sm90.tma_problem(A, Bt, Sm90Config(128, 96, 64, stages=6), "float16") is None
    for cfg in SM90_TABLE.values():
        cfg.validate()


def test_ragged_mn_major_operands_load_by_column_blocks():
    """An MN-major operand whose extent is no multiple of 64 maps one 64-element column block (the kernel loads
    each block of the tile, TMA zero-fills past the extent); a cluster's multicast does not split such blocks,
    nor do a 192-column tile's interleaved ones, and tc.gemm then takes the fastest unclustered tile TMA reads."""
    A, Bt = _operands(1, 1000, 1000, 1000, ("K", "N"), torch.bfloat16)
    for cfg in (Sm90Config(64, 128, 64, 8, consumers=1), Sm90Config(128, 256, 64, 4), Sm90Config(128, 128, 64, 6)):
        assert sm90.tma_problem(A, Bt, cfg, "bfloat16") is None
        tmA, tmB = sm90.make_maps(A, Bt, cfg, "bfloat16")
        assert tmB.args.box_dims == (64, 64, 1) and tmB.args.global_dims == (1000, 1000, 1)
        D = torch.empty(1, 1000, 1000, dtype=torch.bfloat16)
        args = (tmA, tmB, None, D, None, np.float32(1), np.float32(0), 1000, None, cfg, "bfloat16",
                sm90.operand_majors(A, Bt), EpilogueSpec(), False, sm90.d_map(D, cfg))
        src = sm90.sm90_gemm_kernel.source(*args)
        assert src.count("tma_load_") == 1 + cfg.blk_n // 64               # A whole, B block by block
        r = sm90.sm90_gemm_kernel.compile(*args, arch="sm_90a").resources
        assert r.spill_store_bytes == 0 and r.stack_frame_bytes == 0, r
    # in clusters: the CTAs that multicast the blocked operand share out its blocks (block b from rank b % CTAs,
    # each to both), so a tile's blocks must split evenly among them; the other operand's multicast beside the
    # blocks changes nothing in their loads
    for cfg, loads, multicasts in ((Sm90Config(128, 256, 64, 4, cluster_m=2), 1 + 4, 4),
                                   (Sm90Config(128, 128, 64, 6, cluster_n=2), 1 + 2, 1),
                                   (Sm90Config(128, 128, 64, 6, cluster_m=2, cluster_n=2), 1 + 2, 3),
                                   (Sm90Config(64, 128, 64, 8, consumers=1, cluster_m=2), 1 + 2, 2)):
        assert sm90.tma_problem(A, Bt, cfg, "bfloat16") is None
        tmA, tmB = sm90.make_maps(A, Bt, cfg, "bfloat16")
        assert tmB.args.box_dims == (64, 64, 1) and tmB.args.multicast == 1  # one CTA's block, multicast or not
        D = torch.empty(1, 1000, 1000, dtype=torch.bfloat16)
        args = (tmA, tmB, None, D, None, np.float32(1), np.float32(0), 1000, None, cfg, "bfloat16",
                sm90.operand_majors(A, Bt), EpilogueSpec(), False, sm90.d_map(D, cfg))
        src = sm90.sm90_gemm_kernel.source(*args)
        assert src.count("tma_load_") == loads and src.count("tma_load_multicast") == multicasts, cfg
        # every stage expects its whole tiles, each byte landing once
        assert f"arrive_expect_tx(tc::smem_u32(smem0 + stage), {2 * 64 * (cfg.blk_m + cfg.blk_n)})" in src
        r = sm90.sm90_gemm_kernel.compile(*args, arch="sm_90a").resources
        assert r.spill_store_bytes == 0 and r.stack_frame_bytes == 0, r
    why = sm90.tma_problem(A, Bt, Sm90Config(64, 64, 64, 8, consumers=1, cluster_m=2), "bfloat16")
    assert why.startswith("B: an MN-major extent that is no multiple of 64 (1000)") and "do not split" in why
    # a column-major A of ragged M under the pick's 2x1 cluster (B multicast, A by blocks): the pick runs
    A2, Bt2 = _operands(1, 4000, 8192, 8192, ("M", "K"), torch.bfloat16)
    assert pick_sm90_config(4000, 8192, 8192, 1, 132).cluster_m == 2
    assert sm90.tma_problem(A2, Bt2, pick_sm90_config(4000, 8192, 8192, 1, 132), "bfloat16") is None
    assert "dense box" in sm90.tma_problem(A, Bt, Sm90Config(128, 192, 64, 4), "bfloat16")
    # tc.gemm: the pick where TMA reads it, else the fastest unclustered table tile it reads
    A, Bt = _operands(1, 3000, 2000, 1000, ("K", "N"), torch.bfloat16)
    assert pick_sm90_config(3000, 2000, 1000, 1, 132) == Sm90Config(128, 192, 64, 4)
    assert op_module._readable_sm90_config(Sm90Config(128, 192, 64, 4), A, Bt, "bfloat16", 132) == \
        Sm90Config(128, 128, 64, 6)
    assert op_module._readable_sm90_config(Sm90Config(cluster_m=2), A, Bt, "float8_e4m3fn", 132) is None
    A, Bt = _operands(1, 256, 50257, 4096, ("K", "N"), torch.bfloat16)         # rows of 100514 bytes: no TMA
    assert op_module._readable_sm90_config(Sm90Config(), A, Bt, "bfloat16", 132) is None


def test_heuristic():
    big, mid, small, tiny, wide, wide_small = SM90_TABLE.values()
    big1 = replace(big, cluster_m=1)
    assert pick_sm90_config(8192, 8192, 8192, 1, 132) == big
    # unclustered tiles where each CTA computes a few tiles (1.5 to 8 rounds of 128x128), N <= 10240, K <= 16384
    # (sixteenth session: 1024x6144x4096 1.007x cuBLAS against 0.970x in a 2x1 cluster); 128x256 where its rounds
    # come to the same work as 128x128's (thirty-second session: 4096^3 0.998x against 0.966x, 1024x4096x14336
    # 1.006x against 0.959x), 128x128 where they come to less (1024x10240x8192: 5 rounds of 640 tiles, not 3 of
    # 320 128x256 tiles; 0.976x against 0.806x)
    assert pick_sm90_config(4096, 4096, 4096, 1, 132) == big1
    assert pick_sm90_config(1024, 4096, 14336, 1, 132) == big1
    assert pick_sm90_config(1024, 8192, 8192, 1, 132) == big1
    assert pick_sm90_config(1024, 10240, 8192, 1, 132) == mid
    assert pick_sm90_config(4096, 57344, 8192, 1, 132) == big       # 109 rounds: 0.86x for the 128x128 tile
    assert pick_sm90_config(1024, 8192, 28672, 1, 132) == big       # long K
    assert pick_sm90_config(1024, 28672, 4096, 1, 132) == big       # 14 rounds
    assert pick_sm90_config(4096, 4096, 4096, 1, 132, elem_bytes=1) == big   # measured for 16-bit only
    assert pick_sm90_config(2048, 1536, 1024, 1, 132) == wide      # 128 tiles in one round, not 96 of 128x256
    # whole rounds of tiles decide (H100 probe, seventh session): 128x128 in 7 rounds of 896 tiles beat 128x256 in
    # 4 rounds of 448 (0.99x against 0.84x cuBLAS); 1024x6144: 3 rounds of 128x128 against 2 of 128x256 (0.98x/0.78x
    # at K = 4096)
    assert pick_sm90_config(256, 57344, 8192, 1, 132) == mid        # two m-tiles: no cluster (1.097x against 1.079x)
    assert pick_sm90_config(256, 28672, 4096, 1, 132) == big1        # (1.023x against 1.008x)
    assert pick_sm90_config(1024, 6144, 28672, 1, 132) == wide     # 2 rounds of 128x192, not 3 of 128x128
    assert pick_sm90_config(128, 6144, 4096, 1, 132) == small       # one round of 64x128 (1.01x; 64x64: 0.81x)
    # 16 tiles, long K: split-K, unclustered
    assert pick_sm90_config(512, 512, 65536, 1, 132) == replace(mid, splits=8)
    # fewer rows or a shorter K: the 64x128 tile in 4, 8 or 16 splits (twenty-eighth session, x cuBLAS, new pick
    # against the 128x128 one: 256x512x65536 1.013x / 0.939x, 512x512x8192 1.022x / 0.714x for 64x64 whole)
    assert pick_sm90_config(256, 512, 65536, 1, 132) == replace(small, splits=8)
    assert pick_sm90_config(512, 512, 8192, 1, 132) == replace(small, splits=4)
    assert pick_sm90_config(128, 512, 65536, 1, 132) == replace(small, splits=16)
    # split-K summed in the kernel by blocks costs about 3 µs in the estimate, the reduction kernel 10 (twenty-ninth
    # session, x cuBLAS, new pick against whole 64x64 tiles): 256x1024x8192 1.065x / 0.778x, 128x512x4096 1.022x /
    # 0.783x, 512x1024x8192 1.149x / 0.989x for 128x128 in 4, 64x256x65536 0.942x / 0.892x for 128x128 in 32
    assert pick_sm90_config(256, 1024, 8192, 1, 132) == replace(small, splits=4)
    assert pick_sm90_config(128, 512, 4096, 1, 132) == replace(small, splits=8)
    assert pick_sm90_config(512, 1024, 8192, 1, 132) == replace(mid, splits=4)
    assert pick_sm90_config(64, 256, 65536, 1, 132) == replace(small, splits=16)
    # ... while 2 splits keep the row form and its 10 µs (256x4096x14336: 1.118x for the pick, 1.041x in 2 splits)
    assert pick_sm90_config(256, 4096, 14336, 1, 132).splits == 1
    # fp8 at its own rates (_FP8_RATE) with the block form's 3 µs (thirtieth session, e4m3, H100, new pick against
    # the old: 64x512x65536 21.5 / 25.4 µs for 128x128 in 32 splits, 128x8192x28672 86.7 / 92.9 for 128x128 in 2,
    # 128x256x4096 8.9 / 9.8 for whole 64x64 tiles)
    assert pick_sm90_config(64, 512, 65536, 1, 132, elem_bytes=1) == replace(small, splits=16)
    assert pick_sm90_config(128, 8192, 28672, 1, 132, elem_bytes=1) == small
    assert pick_sm90_config(128, 256, 4096, 1, 132, elem_bytes=1) == replace(small, splits=8)
    assert pick_sm90_config(128, 8192, 28672, 1, 132) == small          # the 16-bit pick, unchanged
    assert pick_sm90_config(512, 1024, 16384, 1, 132) == replace(mid, splits=4)
    # fp8 keeps 10 µs: with 3 its 128x4096x14336 took 128x128 in 4 splits, 0.825x _scaled_mm against 0.936x
    assert pick_sm90_config(128, 4096, 14336, 1, 132, elem_bytes=1) == tiny
    assert pick_sm90_config(128, 4096, 4096, 1, 132) == tiny        # streaming-bound: 128 tiles of 64x64
    assert pick_sm90_config(256, 4096, 4096, 1, 132) == small       # 128 tiles of 64x128
    assert pick_sm90_config(128, 28672, 4096, 1, 132) == replace(big, cluster_m=1)  # one m-tile: no pair
    assert pick_sm90_config(128, 128, 128, 1, 132) == tiny          # too short to split: the most tiles
    assert pick_sm90_config(384, 65536, 4096, 1, 132) == replace(big, cluster_m=1)  # 3 m-tiles: one pair idles
    # 192 columns where they fill whole rounds (twenty-first session): one round of 108 128x192 tiles at
    # 256x10240x8192 (1.009x cuBLAS; stream-K's 128x128, the pick before, 0.882x), 128 64x192 tiles at
    # 256x6144x4096 (1.039x against 0.952x), two rounds of 128x192 at 1024x6144x4096 (1.021x against 1.005x)
    assert pick_sm90_config(256, 10240, 8192, 1, 132) == wide
    assert pick_sm90_config(256, 6144, 4096, 1, 132) == wide_small
    assert pick_sm90_config(1024, 6144, 4096, 1, 132) == wide
    assert pick_sm90_config(1024, 10240, 8192, 1, 132) == mid      # 5 rounds of 128x128 against 4 of 128x192
    assert pick_sm90_config(256, 10240, 8192, 1, 132, elem_bytes=1).blk_n != 192   # measured for 16-bit only
    assert not any(pick_sm90_config(M, N, 8192, 1, 132).stream_k
                   for M, N in ((128, 10240), (256, 10240), (1024, 10240), (256, 8192), (256, 57344), (256, 14336)))
    assert wide.cluster_m == wide_small.cluster_m == 1
    assert big.cluster_m == 2 and big.tma_store and mid.tma_store
    # 128x128 never in a cluster (thirty-third session: a 2x1 cluster launch alone costs it 15% more cycles at
    # 4096^3; one round of tiles at 512x4096x4096 1.002x cuBLAS without, 0.945x in a 2x1 cluster)
    assert mid.cluster == 1 and pick_sm90_config(512, 4096, 4096, 1, 132) == mid
    assert pick_sm90_config(1024, 14336, 4096, 1, 132) == mid
    assert small.consumers == tiny.consumers == 1
    assert [sm90.effective_splits(K, replace(mid, splits=8)) for K in (64, 512, 576, 4096)] == [1, 8, 5, 8]
    fp8 = op_module._fp8_config(big)
    assert (fp8.blk_k, fp8.stages, fp8.cluster_m) == (128, 4, 1)
    fp8.validate(1)
    for cfg in SM90_TABLE.values():                                     # promoted: 64 sums per consumer thread
        p = op_module._fp8_config(cfg, promote=True)
        p.validate(1)
        assert p.promote and not p.pingpong and p.rows * p.blk_n <= 64 * 128 and p.blk_k == 128
        assert p.smem_bytes(1) <= op_module.CTA_SMEM and (p.stages == 8 or
                                                          replace(p, stages=p.stages + 1).smem_bytes(1) > op_module.CTA_SMEM)
    assert op_module._fp8_config(big, promote=True) == replace(fp8, blk_n=128, stages=6, promote=True, **LAG)
    assert op_module._fp8_config(mid, promote=True) == replace(op_module._fp8_config(mid), stages=6, promote=True,
                                                               **LAG)
    assert all(op_module._fp8_config(c, promote=True).lagged for c in SM90_TABLE.values())
    # promoted 128x128 tiles over walks of >= 80 tiles per SM come from the queue in 1x2 clusters; fast
    # accumulation's 128x256 tile and shorter walks keep the static walk
    long_walk = op_module.pick_fp8_config(8192, 28672, 4096, 1, 132)     # 14336 tiles
    assert long_walk == replace(op_module._fp8_config(big, promote=True), cluster_n=2, dynamic=True)
    assert op_module.pick_fp8_config(4096, 28672, 4096, 1, 132) == op_module._fp8_config(big, promote=True)
    assert op_module.pick_fp8_config(4096, 28672, 4096, 3, 132).dynamic  # a batch of 3: 21504 tiles
    assert not op_module.pick_fp8_config(8192, 28672, 4096, 1, 132, promote=False).dynamic
    # 128x192 where it takes the shape in one wave and 128x128 does not (256x10240: 108 tiles against 160)
    assert op_module.pick_fp8_config(256, 10240, 8192, 1, 132) == Sm90Config(128, 192, 128, stages=4, promote=True)
    assert op_module.pick_fp8_config(256, 6144, 4096, 1, 132).blk_n != 192          # 96 tiles of 128x128: one wave
    assert op_module.pick_fp8_config(1024, 10240, 8192, 1, 132).blk_n != 192
    assert op_module.pick_fp8_config(256, 10240, 8192, 1, 132, promote=False).blk_n != 192


# ----------------------------------------------------------------------------------------- GPU

def _hopper():
    return torch.cuda.get_device_capability() == (9, 0)


def _reference(A, B, C, alpha, beta, bias, along, act):
    x = alpha * (A.double() @ B.double())
    if C is not None:
        x = x + beta * C.double()
    if bias is not None:
        x = x + (bias.double() if along == "n" else bias.double()[:, None])
    return {"none": lambda v: v, "relu": torch.relu, "gelu": torch.nn.functional.gelu,
            "silu": torch.nn.functional.silu}[act](x)


CASES = [
    dict(M=128, N=256, K=64), dict(M=1000, N=1000, K=1000), dict(M=333, N=517, K=264), dict(M=1, N=8, K=8),
    dict(M=832, N=640, K=520, majors="MK"), dict(M=777, N=640, K=520, majors="KN"),
    dict(M=640, N=320, K=520, majors="MN", elem="bfloat16"), dict(M=300, N=500, K=136, L=3),
    dict(M=300, N=500, K=136, L=3, bcast=True), dict(M=515, N=260, K=200, C=True, alpha=0.5, beta=-1.5),
    dict(M=515, N=260, K=200, bias="n", act="relu"), dict(M=515, N=260, K=200, bias="m", act="gelu"),
    dict(M=515, N=260, K=200, act="silu", out="float32"), dict(M=700, N=900, K=1104, cfg=Sm90Config(128, 128, 64, 6)),
    dict(M=700, N=904, K=1104, cfg=Sm90Config(256, 128, 64, 3)),
    dict(M=1344, N=768, K=520, majors="MN", cfg=Sm90Config(cluster_m=2)),      # odd m-tiles in a cluster of 2
    dict(M=200, N=1000, K=1000, C=True, beta=0.5, cfg=Sm90Config(64, 128, 64, 8, consumers=1)),  # one consumer
    dict(M=130, N=4096, K=4096, bias="n", act="silu", cfg=Sm90Config(64, 64, 64, 8, consumers=1)),
    dict(M=384, N=512, K=256, L=3, C=True, beta=0.5, cfg=Sm90Config(cluster_m=2)),
    # clusters along N (A multicast) and 2x2 (both): odd n-tiles and m-tiles in a cluster, both majors, batch,
    # epilogues, split-K, stream-K, pingpong
    dict(M=1024, N=1000, K=1000, majors="MK", cfg=Sm90Config(cluster_n=2)),     # (an M-major A: M of 64s)
    dict(M=600, N=1100, K=520, C=True, beta=0.5, bias="n", act="gelu", cfg=Sm90Config(cluster_m=2, cluster_n=2)),
    dict(M=576, N=1088, K=520, L=2, majors="MN", cfg=Sm90Config(128, 128, 64, 6, cluster_m=2, cluster_n=2)),
    dict(M=1000, N=1000, K=2000, bias="m", cfg=Sm90Config(128, 128, 64, 6, cluster_m=2, cluster_n=2, stream_k=1)),
    dict(M=300, N=500, K=2000, out="float32", cfg=Sm90Config(128, 128, 64, 6, cluster_n=2, splits=3)),
    dict(M=1920, N=2560, K=520, majors="KN", cfg=Sm90Config(128, 128, 64, 5, cluster_m=2, cluster_n=2, pingpong=True)),
    dict(M=512, N=512, K=8192, C=True, beta=-1.0, bias="n", act="gelu", cfg=Sm90Config(128, 128, 64, 6, splits=8)),
    dict(M=200, N=320, K=2000, L=2, majors="KN", cfg=Sm90Config(128, 128, 64, 6, splits=5)),
    # split-K summed in the kernel by accumulator blocks (the splits divide each consumer's blocks): ragged
    # tiles, batch, C, bias along M, fp32 out, one consumer with 16 splits
    dict(M=300, N=500, K=4000, L=2, C=True, beta=0.5, bias="m", act="silu", cfg=Sm90Config(128, 128, 64, 6, splits=4)),
    dict(M=333, N=200, K=3000, out="float32", cfg=Sm90Config(64, 128, 64, 8, consumers=1, splits=16)),
    # a split-K output of 2^20 elements: the reduction sums 4 per thread
    dict(M=1024, N=1024, K=1536, C=True, beta=0.5, bias="n", act="relu", cfg=Sm90Config(128, 128, 64, 6, splits=3)),
    # pingpong: the consumers take whole tiles in turn; 2 units per CTA, 3 (odd), ragged, 1 k-tile, batch
    dict(M=2000, N=2048, K=1000, cfg=Sm90Config(64, 256, 64, 4, pingpong=True)),
    dict(M=1999, N=1900, K=520, C=True, beta=0.5, bias="n", act="gelu", cfg=Sm90Config(128, 128, 64, 5, pingpong=True)),
    dict(M=1920, N=2560, K=700, majors="MN", cfg=Sm90Config(128, 128, 64, 5, cluster_m=2, pingpong=True)),
    dict(M=1920, N=2560, K=520, bias="m", act="relu", cfg=Sm90Config(64, 256, 64, 4, cluster_m=2, pingpong=True)),
    dict(M=4096, N=2048, K=64, cfg=Sm90Config(64, 256, 64, 4, pingpong=True)),
    dict(M=700, N=900, K=1104, L=3, out="float32", cfg=Sm90Config(64, 256, 64, 4, pingpong=True)),
    # 192-wide tiles (3 x 64-column B boxes) and three consumer warpgroups of 64 rows
    dict(M=700, N=1088, K=1104, majors="KN", cfg=Sm90Config(128, 192, 64, 4)),
    dict(M=200, N=704, K=1000, majors="MN", bias="n", act="relu", cfg=Sm90Config(64, 192, 64, 6, consumers=1)),
    dict(M=333, N=1000, K=520, C=True, beta=-1.0, cfg=Sm90Config(128, 192, 64, 4)),      # K-major B: any N
    dict(M=1000, N=1000, K=520, C=True, beta=0.5, bias="n", act="gelu", cfg=THREE_CONSUMERS),
    dict(M=1344, N=768, K=520, majors="MN", cfg=replace(THREE_CONSUMERS, blk_n=128, stages=4, cluster_m=2)),
    dict(M=300, N=500, K=2000, L=2, out="float32", cfg=replace(THREE_CONSUMERS, splits=3)),
    dict(M=2000, N=1000, K=1000, bias="m", cfg=replace(THREE_CONSUMERS, stream_k=1)),
    # 2x1 clusters of 192-column tiles: an N-major B halves along k (three 64-column blocks do not halve)
    dict(M=1088, N=1088, K=1000, majors="MN", cfg=replace(THREE_CONSUMERS, cluster_m=2)),
    dict(M=1344, N=1000, K=520, L=2, C=True, beta=0.5, cfg=replace(THREE_CONSUMERS, cluster_m=2)),
    dict(M=700, N=1088, K=1104, majors="KN", bias="n", act="silu", cfg=Sm90Config(128, 192, 64, 4, cluster_m=2)),
    # tiles claimed from the queue (dynamic): ragged, batch, both majors, epilogues, 192 columns, one consumer,
    # fewer tiles than SMs (every CTA's first claim finds the queue empty), one k-tile
    dict(M=1000, N=1000, K=1000, C=True, beta=0.5, bias="n", act="gelu", cfg=Sm90Config(128, 128, 64, 6, dynamic=True)),
    dict(M=2048, N=2112, K=520, L=3, majors="MN", cfg=Sm90Config(dynamic=True)),
    dict(M=700, N=1088, K=1104, majors="KN", bias="m", cfg=Sm90Config(128, 192, 64, 4, dynamic=True)),
    dict(M=200, N=300, K=64, out="float32", cfg=Sm90Config(64, 128, 64, 8, consumers=1, dynamic=True)),
    dict(M=4096, N=4096, K=256, elem="bfloat16", cfg=Sm90Config(128, 128, 64, 6, dynamic=True)),
    # ... in clusters: rank 0 claims and hands each unit to its peers (2x1 ragged with the full epilogue, 1x2 with
    # batch, 2x2 with more tiles than SMs)
    dict(M=1000, N=1100, K=704, C=True, beta=0.5, bias="n", act="relu", cfg=Sm90Config(cluster_m=2, dynamic=True)),
    dict(M=1024, N=1000, K=1000, L=2, cfg=Sm90Config(128, 128, 64, 6, cluster_n=2, dynamic=True)),
    dict(M=4096, N=4096, K=520, majors="MN", cfg=Sm90Config(128, 128, 64, 6, cluster_m=2, cluster_n=2, dynamic=True)),
    # MN-major operands whose extent is no multiple of 64, loaded by 64-element column blocks (zeros past the
    # extent): B row-major at N = 1000, A column-major at M = 1000, every schedule but clusters
    dict(M=1000, N=1000, K=1000, majors="KN", cfg=Sm90Config(64, 128, 64, 8, consumers=1)),
    dict(M=3000, N=2000, K=1000, majors="KN", elem="bfloat16", cfg=Sm90Config(128, 128, 64, 6)),
    dict(M=1000, N=1000, K=520, majors="MN", C=True, beta=0.5, bias="n", act="gelu", cfg=Sm90Config(128, 256, 64, 4)),
    dict(M=1000, N=1024, K=520, majors="MK", bias="m", cfg=Sm90Config(128, 128, 64, 6)),
    dict(M=200, N=1000, K=2000, majors="KN", out="float32", cfg=Sm90Config(128, 128, 64, 6, splits=3)),
    dict(M=1000, N=1000, K=2000, majors="MN", cfg=Sm90Config(128, 128, 64, 6, stream_k=1)),
    dict(M=1000, N=1000, K=1000, L=2, majors="KN", cfg=Sm90Config(128, 128, 64, 6, dynamic=True)),
    dict(M=1000, N=1000, K=520, majors="MN", cfg=Sm90Config(128, 128, 64, 5, pingpong=True)),
    dict(M=136, N=8, K=64, majors="MN", cfg=Sm90Config(64, 64, 64, 8, consumers=1)),          # one block, mostly zeros
    # ... in clusters: the CTAs that multicast a blocked operand share out its blocks (B in 2x1, A in 1x2, both in
    # 2x2), or the blocks load beside the other operand's multicast
    dict(M=1000, N=1000, K=1000, majors="KN", cfg=Sm90Config(128, 256, 64, 4, cluster_m=2)),
    dict(M=1000, N=2000, K=520, majors="KN", C=True, beta=0.5, bias="n", act="relu",
         cfg=Sm90Config(128, 128, 64, 6, cluster_m=2, cluster_n=2)),
    dict(M=1000, N=1000, K=1000, majors="MK", cfg=Sm90Config(128, 128, 64, 6, cluster_n=2)),
    dict(M=1000, N=1024, K=1000, majors="MK", bias="m", cfg=Sm90Config(128, 128, 64, 6, cluster_m=2)),
    dict(M=1000, N=1000, K=520, L=2, majors="KN", cfg=Sm90Config(128, 128, 64, 6, cluster_n=2)),
    dict(M=2000, N=1000, K=1000, majors="MN", cfg=Sm90Config(128, 256, 64, 4, cluster_m=2, dynamic=True)),
    dict(M=200, N=1000, K=2000, majors="KN", out="float32", cfg=Sm90Config(64, 128, 64, 8, consumers=1, cluster_m=2,
                                                                           splits=3)),
]


def test_dynamic_schedule_claims_tickets():
    """dynamic: the producer claims each next unit with a relaxed atomic on flags(0), and the consumers read the
    units from the two slots; the rules refuse what it does not do."""
    cfg = Sm90Config(128, 128, 64, 6, dynamic=True)
    assert cfg.name == "sm90_128x128x64_s6_c2_dyn"
    k, args = _compile(cfg, "float16")
    args = args + (torch.zeros(264, dtype=torch.int32),)
    src = k.source(*args)
    assert src.count("tc::atomic_add_relaxed(flags, 1)") == 1 and "int(gridDim.x) + ticket" in src
    assert src.count("break;") == 2                                     # the producer's and the consumers' loops end
    assert k.compile(*args, arch="sm_90a").resources.spill_store_bytes == 0
    with pytest.raises(TypeError, match="claims its units from flags"):
        k.source(*args[:-1])
    for bad in (dict(splits=2), dict(stream_k=1), dict(pingpong=True)):
        with pytest.raises(ValueError, match="dynamic hands out whole tiles"):
            replace(cfg, **bad).validate()


@pytest.mark.gpu
def test_dynamic_schedule_leaves_its_queue_at_zero(monkeypatch):
    """The tickets come back to 0 at the end of each launch: launches in a row (more tiles than SMs, fewer, one)
    each match float64, and the queue reads 0 after them."""
    if not _hopper():
        pytest.skip("needs sm_90")
    torch.manual_seed(2)
    plans = _watch_launches(monkeypatch, None)
    for cfg in (Sm90Config(128, 128, 64, 6, dynamic=True), Sm90Config(cluster_m=2, dynamic=True)):
        op = GemmOp("float16", None, cfg)
        for M, N, K in [(2048, 2048, 512), (256, 512, 128), (128, 128, 64), (2048, 2048, 512), (1000, 3072, 200)] * 2:
            A, B = torch.randn(M, K, device="cuda").half(), torch.randn(K, N, device="cuda").half()
            ref = A.double() @ B.double()
            err = float((op(A, B).double() - ref).norm() / ref.norm())
            assert err < 2e-3, (cfg.name, M, N, K, err)
    queues = [f for plan in plans for f in plan._flags.values()]
    assert len(plans) == 8 and len(queues) == 8 and all(int(f.abs().sum()) == 0 for f in queues)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items() if k != "cfg"))
def test_sm90_gemm_matches_float64(case):
    if not _hopper():
        pytest.skip("needs sm_90")
    torch.manual_seed(0)
    M, N, K, L = case["M"], case["N"], case["K"], case.get("L")
    elem = case.get("elem", "float16")
    dt = _DT[elem]
    majors = case.get("majors", "KK")
    lead = () if L is None else (L,)
    A = torch.randn(*lead, M, K, device="cuda").to(dt)
    if majors[0] == "M":
        A = A.transpose(-1, -2).contiguous().transpose(-1, -2)
    B = torch.randn(*(() if case.get("bcast") else lead), K, N, device="cuda").to(dt)
    if majors[1] == "K":
        B = B.transpose(-1, -2).contiguous().transpose(-1, -2)
    C = torch.randn(*lead, M, N, device="cuda").to(dt) if case.get("C") else None
    along = case.get("bias", "none")
    bias = torch.randn(N if along == "n" else M, device="cuda").to(dt) if along != "none" else None
    act, out = case.get("act", "none"), case.get("out")
    alpha, beta = case.get("alpha", 1.0), case.get("beta", 0.0)
    op = GemmOp(elem, out, case.get("cfg", Sm90Config()), act, along)
    D = op(A, B, C, alpha=alpha, beta=beta, bias=bias)
    ref = _reference(A, B, C, alpha, beta, bias, along, act)
    err = float((D.double() - ref).norm() / ref.norm())
    assert err < (1e-4 if out == "float32" else 2e-3 if elem == "float16" else 1.5e-2), err


def _watch_launches(monkeypatch, arg: int | None = 7) -> list:
    """The list that collects argument `arg` (7: the configuration, 8: the element type; None: the Launch itself)
    of every sm90.Launch that tc.gemm prepares from now on; earlier plans are forgotten, since calls of a known
    signature skip preparing their Launch."""
    seen = []
    real = sm90.Launch

    def watched(*a, **k):
        if arg is not None:
            seen.append(a[arg])
        launch = real(*a, **k)
        if arg is None:
            seen.append(launch)
        return launch

    clear_plans()
    monkeypatch.setattr(sm90, "Launch", watched)
    return seen


@pytest.mark.gpu
def test_gpu_tc_gemm_reads_a_ragged_row_major_b_through_tma(monkeypatch):
    """A row-major B of N = 1000 / 2000 (no multiple of 64) runs the Hopper kernel, loaded by column blocks: its
    pick where TMA reads it, else the fastest unclustered tile (it ran the sm80 kernel, 0.68-0.76x cuBLAS)."""
    if not _hopper():
        pytest.skip("needs sm_90")
    from tilecraft.gemm import gemm

    seen = _watch_launches(monkeypatch, None)
    torch.manual_seed(3)
    for M, N, K in ((1000, 1000, 1000), (3000, 2000, 1000), (4096, 1000, 520)):
        A, B = torch.randn(M, K, device="cuda").bfloat16(), torch.randn(K, N, device="cuda").bfloat16()
        ref = A.double() @ B.double()
        assert float((gemm(A, B).double() - ref).norm() / ref.norm()) < 1e-2
    assert [launch.cfg.name for launch in seen] == ["sm90_128x128x64_s6_c2_cl2x1"] + ["sm90_128x256x64_s4_c2_cl2x1"] * 2
    assert [launch.majors for launch in seen] == [("K", "N")] * 3                 # B as it is, no copy


@pytest.mark.gpu
def test_tc_gemm_takes_the_hopper_path(monkeypatch):
    if not _hopper():
        pytest.skip("needs sm_90")
    from tilecraft.gemm import gemm
    seen = _watch_launches(monkeypatch)
    A = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
    B = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
    D = gemm(A, B)
    ref = A.double() @ B.double()
    assert float((D.double() - ref).norm() / ref.norm()) < 2e-3
    assert seen == [pick_sm90_config(2048, 2048, 2048, 1, torch.cuda.get_device_properties(0).multi_processor_count)]


@pytest.mark.gpu
@pytest.mark.parametrize("elem", ["bfloat16", "float16"])
def test_tc_gemm_split_picks_at_small_shapes_match_float64(elem, monkeypatch):
    """The small shapes whose pick is split-K summed in the kernel by blocks (64x128 in 4-16 splits, 128x128 in
    4), through tc.gemm with C, bias and GELU."""
    if not _hopper():
        pytest.skip("needs sm_90")
    from tilecraft.gemm import gemm
    torch.manual_seed(0)
    seen = _watch_launches(monkeypatch)
    dt = getattr(torch, elem)
    for M, N, K in [(64, 256, 4096), (128, 512, 4096), (256, 1024, 8192), (512, 1024, 8192)]:
        A = torch.randn(M, K, device="cuda").to(dt)
        B = (torch.randn(K, N, device="cuda") * 0.05).to(dt)
        C = torch.randn(M, N, device="cuda").to(dt)
        bias = torch.randn(N, device="cuda").to(dt)
        D = gemm(A, B, C, alpha=0.5, beta=2.0, bias=bias, activation="gelu")
        ref = torch.nn.functional.gelu(0.5 * (A.double() @ B.double()) + 2.0 * C.double() + bias.double())
        err = float((D.double() - ref).norm() / ref.norm())
        assert err < 1e-2, (M, N, K, err)
        assert seen[-1].splits >= 4 and sm90.split_blocks(seen[-1]), (M, N, K, seen[-1])


@pytest.mark.gpu
def test_operands_tma_cannot_read_are_refused_by_the_op_and_rerouted_by_tc_gemm():
    if not _hopper():
        pytest.skip("needs sm_90")
    from tilecraft.gemm import gemm
    A = torch.randn(300, 700, device="cuda", dtype=torch.float16)[:, :699]   # rows of 1400 bytes: no TMA
    B = torch.randn(699, 256, device="cuda", dtype=torch.float16)
    ok, why = GemmOp("float16", None, Sm90Config()).can_implement(A, B)
    assert not ok and "TMA" in why
    ref = A.double() @ B.double()
    assert float((gemm(A, B).double() - ref).norm() / ref.norm()) < 2e-3


@pytest.mark.parametrize("elem", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_compiles_to_qgmma(elem):
    cfg = Sm90Config(128, 256, 128, stages=4)
    A = torch.empty(1, 256, 256, dtype=getattr(torch, elem))
    Bt = torch.empty(1, 256, 256, dtype=getattr(torch, elem))
    D = torch.empty(1, 256, 256, dtype=torch.bfloat16)
    tmA, tmB = sm90.make_maps(A, Bt, cfg, elem)
    args = (tmA, tmB, None, D, None, np.float32(2), np.float32(0), 256, None, cfg, elem, ("K", "K"),
            EpilogueSpec(unit_alpha=False), True)
    k = sm90.sm90_gemm_kernel.compile(*args, arch="sm_90a")
    assert k.resources.spill_store_bytes == 0
    assert f"wgmma_m64n256k32_f32_{sm90.ELEMENTS[elem][1]}_{sm90.ELEMENTS[elem][1]}_ss(" in sm90.sm90_gemm_kernel.source(*args)
    if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
        assert "QGMMA" in rt.sass(k.module.cubin)
    with pytest.raises(dsl.TraceError, match="128 bytes"):
        bad = (tmA, tmB, None, D, None, np.float32(2), np.float32(0), 256, None, Sm90Config(), elem, ("K", "K"),
               EpilogueSpec(), True)
        sm90.sm90_gemm_kernel.source(*bad)


#: the registers of the lagged promotion (three sets of 64 sums: Sm90Config.lagged), as tc.gemm's picks take them
LAG = dict(producer_regs=24, consumer_regs=240)
PROMOTED = [Sm90Config(128, 128, 128, stages=6, promote=True, **LAG),
            Sm90Config(128, 128, 128, stages=6, promote=True),                  # 232 registers: not lagged
            Sm90Config(128, 192, 128, stages=4, promote=True),                  # 96 sums: not lagged
            Sm90Config(128, 128, 128, stages=6, cluster_m=2, promote=True, **LAG),
            Sm90Config(128, 128, 128, stages=6, cluster_m=2, cluster_n=2, promote=True, **LAG),
            Sm90Config(128, 128, 128, stages=6, stream_k=2, promote=True, **LAG),
            Sm90Config(64, 128, 128, stages=6, pingpong=True, promote=True, **LAG),
            Sm90Config(64, 128, 128, stages=8, consumers=1, promote=True, **LAG),
            Sm90Config(128, 128, 128, stages=6, promote=True, dynamic=True, **LAG),
            Sm90Config(128, 128, 128, stages=6, cluster_n=2, promote=True, dynamic=True, **LAG)]


@pytest.mark.parametrize("cfg", PROMOTED, ids=lambda c: c.name)
def test_fp8_promotion_compiles_unserialized_and_without_spills(cfg):
    """Promotion: each k-tile's wgmmas start afresh (scale-d 0) and, once waited for, are added into fp32
    sums. ptxas keeps the wgmmas asynchronous (no C7514 serialization), with C, bias, GELU and either output
    type, and nothing spills. Lagged (three sets of sums fit), the warpgroup waits for all but its newest
    k-tile (wait_group 1) and adds the set of the one before; otherwise it waits for all (wait_group 0)."""
    assert cfg.lagged == (cfg.consumer_regs == 240 and cfg.blk_n * cfg.rows <= 128 * 64)
    ep = EpilogueSpec(read_c=True, unit_alpha=False, bias="n", activation="gelu")
    for out in (None, torch.float32):
        A = torch.empty(1, 512, 512, dtype=torch.float8_e4m3fn)
        Bt = torch.empty(1, 512, 512, dtype=torch.float8_e4m3fn)
        D = torch.empty(1, 512, 512, dtype=out or torch.bfloat16)
        C, bias = torch.empty(1, 512, 512, dtype=D.dtype), torch.empty(512, dtype=D.dtype)
        tmA, tmB = sm90.make_maps(A, Bt, cfg, "float8_e4m3fn")
        W = sm90.streamk_workspace(D, 132, cfg) if cfg.stream_k else None
        flags = torch.zeros(132 * cfg.consumers, dtype=torch.int32) if cfg.stream_k or cfg.dynamic else None
        args = (tmA, tmB, C, D, bias, np.float32(1), np.float32(0), 512, W, cfg, "float8_e4m3fn", ("K", "K"), ep, False,
                sm90.d_map(D, cfg), flags)
        k = sm90.sm90_gemm_kernel.compile(*args, arch="sm_90a")
        assert k.resources.spill_store_bytes == 0 and "serialized" not in k.module.log, (cfg.name, k.resources)
        src = sm90.sm90_gemm_kernel.source(*args)
        assert "_ss(" in src and ", 0u)" in src                        # wgmmas that overwrite their set
        assert ("tc::wgmma_wait_group<1>()" in src) == cfg.lagged and "tc::wgmma_wait_group<0>()" in src
        if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
            text = rt.sass(k.module.cubin)
            assert "QGMMA" in text and ("DEPBAR.LE gsb0, 0x1" in text) == cfg.lagged


def test_fp8_promotion_rules():
    assert Sm90Config(128, 128, 128, promote=True).name.endswith("_promote")
    assert Sm90Config(128, 128, 128, promote=True, **LAG).name.endswith("_promote_lag")
    with pytest.raises(ValueError, match="fp8 operands"):
        Sm90Config(128, 128, 64, promote=True).validate(2)
    with pytest.raises(ValueError, match="two sets of 128"):
        Sm90Config(128, 256, 128, promote=True).validate(1)
    with pytest.raises(ValueError, match="more than 160 registers"):
        Sm90Config(192, 192, 128, 3, consumers=3, producer_regs=24, consumer_regs=160, promote=True).validate(1)
    with pytest.raises(ValueError, match="64 x 128 with one"):
        Sm90Config(64, 192, 128, 6, consumers=1, promote=True).validate(1)
    from tilecraft.gemm import gemm
    a16 = torch.zeros(64, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="fast_accum is an option of fp8"):
        gemm(a16, a16, fast_accum=True)
    a8 = torch.zeros(64, 64, dtype=torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="contradicts the config's promote=True"):
        gemm(a8, a8, config=PROMOTED[0], fast_accum=True)
    with pytest.raises(ValueError, match="contradicts the config's promote=False"):
        gemm(a8, a8, config=Sm90Config(128, 256, 128), fast_accum=False)


@pytest.mark.gpu
@pytest.mark.parametrize("elem", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_matches_float64_with_scales(elem):
    if not _hopper():
        pytest.skip("needs sm_90")
    from tilecraft.gemm import gemm
    torch.manual_seed(0)
    dt = getattr(torch, elem)
    for M, N, K in [(1000, 1000, 1024), (333, 512, 272), (4096, 4096, 4096)]:
        A = torch.randn(M, K, device="cuda").to(dt)
        B = torch.randn(N, K, device="cuda").to(dt).t()                # column-major, as _scaled_mm takes it
        bias = torch.randn(N, device="cuda").to(torch.bfloat16)
        D = gemm(A, B, scale_a=0.5, scale_b=3.0, bias=bias)
        assert D.dtype == torch.bfloat16
        ref = 1.5 * (A.double() @ B.double())
        err = float((D.double() - (ref + bias.double())).norm() / ref.norm())
        assert err < 1.5e-2, (M, N, K, err)                            # bf16 output rounding
        D2 = gemm(A, B, scale_a=0.5, scale_b=3.0, out_dtype=torch.float32, fast_accum=True)
        fast = float((D2.double() - ref).norm() / ref.norm())
        # exact products, but Hopper's fp8 wgmma adds them with fewer than fp32's mantissa bits: the error
        # grows with K (measured 2e-4 .. 3.4e-4 at K = 1024, 1.3e-3 at K = 4096 on an H100)
        assert fast < 1e-3 * max(1.0, K / 1024) ** 0.5 * 1.5, (M, N, K, fast)
        D3 = gemm(A, B, scale_a=0.5, scale_b=3.0, out_dtype=torch.float32)      # promoted: the default
        err = float((D3.double() - ref).norm() / ref.norm())
        print(f"fp8 {elem} {M}x{N}x{K}: fast {fast:.2e}, promoted {err:.2e}")
        if N % 16 == 0 and elem == "float8_e4m3fn":                   # what _scaled_mm takes
            one = torch.ones((), device="cuda")
            cublas = torch._scaled_mm(A, B, scale_a=one, scale_b=one, out_dtype=torch.float32)
            cublas = float((1.5 * cublas.double() - ref).norm() / ref.norm())
            print(f"fp8 {elem} {M}x{N}x{K}: _scaled_mm {cublas:.2e}")
            assert err <= 1.5 * cublas + 1e-6, (M, N, K, err, cublas)  # as accurate as cuBLASLt's default
        if K >= 4096:
            assert err < fast / 2, (M, N, K, err, fast)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", PROMOTED + [Sm90Config(128, 128, 128, stages=6, splits=3, promote=True),
                                 Sm90Config(64, 128, 128, stages=8, consumers=1, splits=8, promote=True, **LAG)],
                         ids=lambda c: c.name)
def test_fp8_promoted_configs_match_float64(cfg):
    """Every promoted form (clusters, stream-K, split-K, pingpong, one consumer) against float64, with K of
    1, 3 (odd: the loop's tail) and 32 k-tiles, ragged M and N, a batch, and the full epilogue; the last shape
    has few tiles, so split-K sums in the kernel (by blocks with 8 splits)."""
    if not _hopper():
        pytest.skip("needs sm_90")
    from tilecraft.gemm import gemm
    torch.manual_seed(1)
    dt = torch.float8_e4m3fn
    for L, M, N, K in [(1, 256, 256, 128), (1, 333, 520, 272), (2, 1000, 1000, 1024), (1, 1024, 768, 4096),
                       (1, 200, 256, 4096)]:
        A = torch.randn(L, M, K, device="cuda").to(dt)
        B = torch.randn(L, N, K, device="cuda").to(dt).transpose(1, 2)
        C = torch.randn(L, M, N, device="cuda")
        bias = torch.randn(N, device="cuda")
        ref = 2.0 * (A.double() @ B.double())
        D = gemm(A, B, C, alpha=2.0, beta=0.5, bias=bias, activation="relu", out_dtype=torch.float32, config=cfg)
        want = torch.relu(ref + 0.5 * C.double() + bias.double())
        err = float((D.double() - want).norm() / want.norm())
        print(f"{cfg.name} {L}x{M}x{N}x{K}: {err:.2e}")
        assert err < 2e-4, (cfg.name, L, M, N, K, err)


@pytest.mark.parametrize("out", [None, torch.bfloat16, torch.float32])
def test_epilogue_through_smem_and_tma_store(out):
    """The default epilogue: fragments -> swizzled smem chunks (4- / 8-byte stores, no bank-conflicting
    scalar stores) -> one TMA store per chunk; a D that TMA cannot write keeps the register epilogue."""
    cfg = Sm90Config(128, 256, 64, stages=4)
    kern, args = _compile(cfg, "float16", ep=EpilogueSpec(read_c=True, bias="n", activation="silu"), out=out)
    assert args[-1] is not None and args[-1].args.box_dims[:2] == (32 if out == torch.float32 else 64, 64)
    src = kern.source(*args)
    assert "tc::tma_store_3d(" in src and "tc::bar_sync(" in src and "tc::tma_store_wait<0>()" in src
    k = kern.compile(*args, arch="sm_90a")
    assert k.resources.spill_store_bytes == 0 and "serialized" not in k.module.log
    assert cfg.smem_bytes() <= 227 * 1024
    if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
        text = rt.sass(k.module.cubin)
        assert "UTMASTG" in text
        assert "STS.U16" not in text                                    # pairs of columns per store at least
    # D that TMA cannot write: M-major, or a row stride that is not a multiple of 16 bytes
    D = torch.empty(1, 256, 256, dtype=torch.float16).transpose(1, 2)
    assert sm90.d_map(D, cfg) is None
    D = torch.empty(1, 256, 260, dtype=torch.float16)[:, :, :255]
    assert sm90.d_map(D, cfg) is None
    assert sm90.d_map(torch.empty(1, 256, 256, dtype=torch.float16), Sm90Config(tma_store=False)) is None
    assert sm90.d_map(torch.empty(1, 256, 256, dtype=torch.float32), cfg).args.box_dims[:2] == (32, 64)
    assert sm90.d_map(torch.empty(1, 256, 258, dtype=torch.float32)[:, :, :256], cfg) is None   # 1032-byte rows


@pytest.mark.parametrize("cfg", [Sm90Config(128, 128, 64, 6), Sm90Config(128, 256, 64, 4, cluster_m=2),
                                 Sm90Config(64, 128, 64, 8, consumers=1), Sm90Config(128, 192, 64, 4),
                                 Sm90Config(128, 128, 128, 6, promote=True, **LAG)], ids=lambda c: c.name)
@pytest.mark.parametrize("full", [True, False])
def test_c_arrives_by_tma_in_the_epilogue_buffers(cfg, full):
    """With a TMA map of C (tmC, C of D's type), each chunk of C lands in the chunk's epilogue buffer (one
    mbarrier per buffer) and the epilogue reads it there instead of loading C's fragments from global memory."""
    elem = "float8_e4m3fn" if cfg.promote else "bfloat16"
    dt = _DT[elem] if elem != "float8_e4m3fn" else torch.float8_e4m3fn
    A, Bt = _operands(1, 256, 256, 256, ("K", "K"), dt)
    D = torch.empty(1, 256, 256, dtype=torch.bfloat16)
    C = torch.empty(1, 256, 256, dtype=torch.bfloat16)
    bias = torch.empty(256, dtype=torch.bfloat16)
    tmA, tmB = sm90.make_maps(A, Bt, cfg, elem)
    ep = EpilogueSpec(read_c=True, unit_alpha=False, bias="n", activation="gelu")
    tmC = sm90.d_map(C, cfg)
    assert tmC is not None and tmC.args.box_dims == sm90.d_map(D, cfg).args.box_dims
    args = (tmA, tmB, C, D, bias, np.float32(1), np.float32(0.5), 256, None, cfg, elem, ("K", "K"), ep, full,
            sm90.d_map(D, cfg), None, tmC)
    src = sm90.sm90_gemm_kernel.source(*args)
    chunks = cfg.blk_n // 64
    assert src.count("&tmC,") == -(-cfg.blk_n // 64) and "c_tiles" in src       # a TMA load per 64-column chunk
    assert "tCgC[" not in src                                            # C comes from smem, not global
    k = sm90.sm90_gemm_kernel.compile(*args, arch="sm_90a")
    assert k.resources.spill_store_bytes == 0 and "serialized" not in k.module.log, k.resources
    if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
        text = rt.sass(k.module.cubin)
        assert text.count("UTMALDG") >= 3 and "UTMASTG" in text, chunks    # A, B and C loads; D stores


@pytest.mark.parametrize("cfg", [Sm90Config(128, 128, 64, 5, pingpong=True), Sm90Config(64, 256, 64, 4, pingpong=True),
                                 Sm90Config(128, 128, 64, 5, cluster_m=2, pingpong=True)], ids=lambda c: c.name)
def test_pingpong_compiles(cfg):
    """Pingpong: each consumer warpgroup holds a whole tile's accumulators, waits for its turn (bar.sync) and
    hands the turn over (bar.arrive); a stage has one consumer per CTA."""
    cfg.validate()
    stages = (cfg.blk_m + cfg.blk_n) * 64 * 2 * cfg.stages
    assert cfg.rows == cfg.blk_m and cfg.smem_bytes() == stages + 2 * 2 * cfg.blk_m * 128 + 16 * cfg.stages + 1024
    kern, args = _compile(cfg, "bfloat16", ep=EpilogueSpec(read_c=True, bias="n", activation="gelu"), full=False)
    src = kern.source(*args)
    assert "tc::bar_arrive(" in src
    counts = sorted(int(line.rsplit(",", 1)[1].strip(" );")) for line in src.splitlines() if "tc::mbarrier_init(" in line)
    assert counts == sorted([1] * cfg.stages + [cfg.cluster_m] * cfg.stages)   # full: the producer; empty: a consumer per CTA
    assert args[-1].args.box_dims[1] == cfg.blk_m                # each consumer stores whole tiles' rows
    k = kern.compile(*args, arch="sm_90a")
    assert k.resources.spill_store_bytes == 0 and "serialized" not in k.module.log
    if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
        text = rt.sass(k.module.cubin)
        assert "HGMMA" in text and "BAR.ARV" in text


def test_pingpong_refuses_what_it_does_not_do():
    for bad, why in ((Sm90Config(128, 256, 64, 3, pingpong=True), "accumulators"),
                     (Sm90Config(64, 128, 64, 8, consumers=1, pingpong=True), "two consumer"),
                     (Sm90Config(128, 128, 64, 5, splits=2, pingpong=True), "split-K"),
                     (Sm90Config(128, 128, 64, 5, stream_k=1, pingpong=True), "stream-K"),
                     (Sm90Config(128, 128, 64, 6, pingpong=True), "smem")):
        with pytest.raises(ValueError, match=why):
            bad.validate()
    from tilecraft.gemm.sm90_mixed import Sm90MixedConfig
    from tilecraft.quant.pack import PackedFormat
    with pytest.raises(ValueError, match="pingpong consumers are not wired"):
        replace(Sm90MixedConfig(), tile=Sm90Config(128, 128, 64, 5, pingpong=True)).validate(
            PackedFormat(4, 128, False, "bfloat16"))


@pytest.mark.parametrize("cm, cn", [(2, 1), (1, 2), (2, 2)])
def test_cluster_multicast_compiles(cm, cn):
    """2x1 clusters share B (each CTA loads half and multicasts it to the CTAs of its n-tile), 1x2 share A, 2x2
    both: every stage's empty barrier counts the consumers of the CTAs that write into it (its row and column)."""
    cfg = Sm90Config(128, 256, 64, stages=4, cluster_m=cm, cluster_n=cn)
    cfg.validate()
    assert cfg.name.endswith(f"_cl{cm}x{cn}") and cfg.cluster == cm * cn
    kern, args = _compile(cfg, "float16")
    src = kern.source(*args)
    assert "tc::tma_load_multicast_3d(" in src and "tc::mbarrier_arrive_cluster(" in src and "tc::cluster_sync()" in src
    assert src.count("tc::tma_load_multicast_3d(") == (cm > 1) + (cn > 1)
    assert src.count("tc::mbarrier_init(") == 2 * cfg.stages
    assert f"mbarrier_init(tc::smem_u32(smem1), {2 * (cm + cn - 1)});" in src    # empty: 2 consumers per writer
    assert src.count("tc::mbarrier_arrive_cluster(") == 2 * (cm + cn - 1)       # in the loop and after it
    k = kern.compile(*args, arch="sm_90a")
    assert k.resources.spill_store_bytes == 0 and "serialized" not in k.module.log
    assert args[0].args.box_dims[1] == 128 // cn                    # each CTA loads 1/cn of A's 128 rows
    assert args[1].args.box_dims[1] == 256 // cm                    # and 1/cm of B's 256 rows
    if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
        # the consumers' remote arrives stay CTA-scoped releases: a cluster-scoped one is a MEMBAR.ALL.GPU
        # per k-tile (measured: half the speed); only the two cluster_syncs fence the GPU
        assert rt.sass(k.module.cubin).count("MEMBAR.ALL.GPU") == 2


def test_maps_of_other_tensors_share_the_specialization():
    """The tensor's address, extents and strides travel in the map: a new operand does not retrace."""
    cfg = Sm90Config()
    k1, a1 = _compile(cfg, "float16")
    ops = [_operands(1, 256, 256, 256, ("K", "K"), torch.float16) for _ in range(2)]  # both alive
    a1 = (*sm90.make_maps(*ops[0], cfg, "float16"), *a1[2:])
    a2 = (*sm90.make_maps(*ops[1], cfg, "float16"), *a1[2:])
    assert a1[0].args.global_address != a2[0].args.global_address
    assert k1.specialize(*a1) is k1.specialize(*a2)


def test_map_cache_does_not_keep_operands_alive():
    """The map cache (keyed on address, extents, strides) holds maps without their tensors: a benchmark
    rotating operands must not pile them up on the GPU."""
    import gc
    import weakref

    cfg = Sm90Config()
    A, Bt = _operands(1, 256, 256, 256, ("K", "K"), torch.float16)
    D = torch.empty(1, 256, 256, dtype=torch.float16)
    maps = [*sm90.make_maps(A, Bt, cfg, "float16"), sm90.d_map(D, cfg)]
    assert all(m is not None and m.tensor is None for m in maps)
    refs = [weakref.ref(t) for t in (A, Bt, D)]
    del A, Bt, D, maps
    gc.collect()
    assert all(r() is None for r in refs)


# ----------------------------------------------------------------------------------------- tf32

# 128-byte k-tiles of fp32 (blk_k = 32), as many stages as fit in 227 KB
TF32_CONFIGS = [Sm90Config(128, 256, 32, stages=4), Sm90Config(128, 128, 32, stages=6, cluster_m=2),
                Sm90Config(64, 128, 32, stages=8, consumers=1), Sm90Config(128, 128, 32, stages=6, splits=4)]


def _tf32_args(cfg, out=torch.float32, ep=EpilogueSpec(), full=True, majors=("K", "K"), L=1):
    A, Bt = _operands(L, 256, 256, 256, majors, torch.float32)
    D = torch.empty(L, 256, 256, dtype=out)
    C = torch.empty(L, 256, 256) if ep.read_c else None
    bias = torch.empty(256) if ep.bias != "none" else None
    W = torch.empty(cfg.splits, L, 256, 256) if cfg.splits > 1 else None
    tmA, tmB = sm90.make_maps(A, Bt, cfg, "tf32")
    return (tmA, tmB, C, D, bias, np.float32(1), np.float32(0), 256, W, cfg, "tf32", sm90.operand_majors(A, Bt), ep,
            full, sm90.d_map(D, cfg))


@pytest.mark.parametrize("out, ep, full", [
    (torch.float32, EpilogueSpec(read_c=True, unit_alpha=False, bias="n", activation="gelu"), False),
    (torch.bfloat16, EpilogueSpec(), True),
], ids=["f32-full-epilogue", "bf16"])
@pytest.mark.parametrize("cfg", TF32_CONFIGS, ids=lambda c: c.name)
def test_tf32_compiles_to_hgmma_tf32_without_spills(cfg, out, ep, full):
    cfg.validate(4)
    args = _tf32_args(cfg, out, ep, full)
    kern = sm90.sm90_gemm_kernel
    src = kern.source(*args)
    # m64nNk8 .tf32 wrappers take no transpose bits: the call has no template arguments
    assert f"tc::wgmma_m64n{cfg.blk_n}k8_f32_tf32_tf32_ss(" in src and "_tf32_ss<" not in src
    assert f"wgmma.mma_async.sync.aligned.m64n{cfg.blk_n}k8.f32.tf32.tf32" in rt.compile_ptx(src, arch="sm_90a")
    k = kern.compile(*args, arch="sm_90a")
    r = k.resources
    assert r.spill_store_bytes == 0 and r.stack_frame_bytes == 0, r
    assert "serialized" not in k.module.log, k.module.log
    if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
        text = rt.sass(k.module.cubin)
        hgmma = [op for op in text.split() if op.startswith("HGMMA.")]
        # one wgmma per (64-row block of the consumer's rows, 8-element k-block of the 32-element k-tile)
        assert hgmma == [f"HGMMA.64x{cfg.blk_n}x8.F32.TF32"] * (cfg.rows // 64 * 4), hgmma
        assert "UTMALDG" in text
        assert ("UTMASTG" in text) == (cfg.splits == 1)                # D (bf16 or fp32): the TMA store


def test_tf32_maps_and_descriptors_share_the_smem_layout():
    cfg = TF32_CONFIGS[0]
    A, Bt = _operands(1, 256, 256, 256, ("K", "K"), torch.float32)
    tmA, tmB = sm90.make_maps(A, Bt, cfg, "tf32")
    assert tmA.smem == sm90.smem_layout(dsl.float32, "K", 128, 32, 4)(None, None, 0)
    # TFLOAT32 maps: TMA rounds the fp32 operands to nearest tf32 (FLOAT32 maps would leave the tensor
    # cores to drop the low mantissa bits, 2.6x the error)
    assert tmA.args.data_type.endswith("_TFLOAT32") and tmB.args.data_type.endswith("_TFLOAT32")
    assert tmA.args.swizzle_bytes == 128
    assert tmA.args.box_bytes == 128 * 32 * 4 and tmB.args.box_bytes == 256 * 32 * 4
    assert tmB.args.box_dims[:2] == (32, 256)                     # K innermost: rows of 32 floats, 128 bytes
    # per stage: the k-tile of A and B; the kernel waits on exactly these bytes
    assert f"{tmA.args.box_bytes + tmB.args.box_bytes}" in sm90.sm90_gemm_kernel.source(*_tf32_args(cfg))


def test_tf32_refuses_what_wgmma_cannot_read():
    """tf32 wgmma has no transpose bits: MN-major operands are refused on the host (tma_problem, with the
    reason) and at trace time; blk_k must be 128 bytes (32 floats); the stages must fit in 227 KB."""
    cfg = TF32_CONFIGS[0]
    for majors, name in ((("M", "K"), "A"), (("K", "N"), "B")):
        A, Bt = _operands(1, 256, 256, 256, majors, torch.float32)
        why = sm90.tma_problem(A, Bt, cfg, "tf32")
        assert why is not None and why.startswith(f"{name}: tf32 wgmma reads K-major operands only"), why
        with pytest.raises(dsl.TraceError, match="tf32 wgmma operands must both be K-major"):
            sm90.sm90_gemm_kernel.source(*_tf32_args(cfg, majors=majors))
        assert sm90.tma_problem(A.half(), Bt.half(), Sm90Config(), "float16") is None   # 16-bit: transposes
    A, Bt = _operands(1, 256, 256, 256, ("K", "K"), torch.float32)
    assert sm90.tma_problem(A, Bt, cfg, "tf32") is None
    A = torch.empty(1, 256, 258)[:, :, :255]                          # rows of 1032 bytes: no TMA
    assert "TMA" in sm90.tma_problem(A, torch.empty(1, 256, 255), cfg, "tf32")
    with pytest.raises(dsl.TraceError, match="128 bytes"):
        sm90.sm90_gemm_kernel.source(*_tf32_args(Sm90Config(128, 256, 64, stages=2)))
    with pytest.raises(ValueError, match="128 bytes"):
        Sm90Config(128, 256, 64, stages=2).validate(4)
    with pytest.raises(ValueError, match="smem"):
        Sm90Config(128, 256, 32, stages=5).validate(4)
    assert Sm90Config(128, 256, 32, stages=4).smem_bytes(4) <= 227 * 1024


def _tf32_gemm(A, Bt, cfg, C=None, bias=None, along="none", act="none", alpha=1.0, beta=0.0, out=torch.float32):
    """sm90.launch with elem="tf32": D (L,M,N) of A (L,M,K) and Bt (L,N,K), fp32 and K-major."""
    L, M, N = A.shape[0], A.shape[1], Bt.shape[1]
    D = torch.empty(L, M, N, dtype=out, device=A.device)
    ep = EpilogueSpec(read_c=C is not None, unit_alpha=alpha == 1, bias=along, activation=act)
    sms = torch.cuda.get_device_properties(A.device).multi_processor_count
    sm90.launch(A, Bt, C, D, bias, np.float32(alpha), np.float32(beta), cfg, "tf32", ep, sms)
    return D


TF32_CASES = [
    dict(M=128, N=256, K=32), dict(M=1000, N=1000, K=1000), dict(M=333, N=517, K=264), dict(M=1, N=8, K=8),
    dict(M=256, N=4096, K=4096),
    dict(M=515, N=260, K=4096, C=True, alpha=0.5, beta=-1.5, bias="n", act="gelu"),
    dict(M=515, N=260, K=200, bias="m", act="relu", out="bfloat16"),
    dict(M=700, N=904, K=1104, out="float16", cfg=1),
    dict(M=1344, N=768, K=520, cfg=1),                                # cluster of 2, odd m-tiles
    dict(M=300, N=500, K=136, L=3, C=True, beta=0.5, cfg=2),         # one consumer, batched
    dict(M=512, N=512, K=4096, C=True, beta=-1.0, bias="n", act="silu", cfg=3),  # split-K
]


@pytest.mark.gpu
@pytest.mark.parametrize("case", TF32_CASES, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_tf32_matches_float64(case):
    if not _hopper():
        pytest.skip("needs sm_90")
    torch.manual_seed(0)
    M, N, K, L = case["M"], case["N"], case["K"], case.get("L", 1)
    cfg = TF32_CONFIGS[case.get("cfg", 0)]
    A = torch.randn(L, M, K, device="cuda")
    Bt = torch.randn(L, N, K, device="cuda")
    C = torch.randn(L, M, N, device="cuda") if case.get("C") else None
    along, act = case.get("bias", "none"), case.get("act", "none")
    bias = torch.randn(N if along == "n" else M, device="cuda") if along != "none" else None
    alpha, beta = case.get("alpha", 1.0), case.get("beta", 0.0)
    out = getattr(torch, case.get("out", "float32"))
    assert sm90.tma_problem(A, Bt, cfg, "tf32") is None
    D = _tf32_gemm(A, Bt, cfg, C, bias, along, act, alpha, beta, out)
    ref = _reference(A, Bt.transpose(1, 2), C, alpha, beta, bias, along, act)
    err = float((D.double() - ref).norm() / ref.norm())
    # tf32 keeps 10 of fp32's 23 mantissa bits (about 1e-3 relative per product); bf16 D rounds to 8
    assert err < (1e-2 if out == torch.bfloat16 else 5e-3), err


def _tf32_round(x, nearest):
    """x (fp32) rounded to tf32, to nearest (ties to even) or toward zero (the low 13 mantissa bits dropped)."""
    i = x.view(torch.int32)
    if nearest:
        i = i + 0x0FFF + ((i >> 13) & 1)
    return (i & ~0x1FFF).view(torch.float32)


@pytest.mark.gpu
def test_tf32_operands_are_rounded_to_nearest():
    """The kernel computes exactly (up to fp32 accumulation) the product of the operands rounded to
    nearest tf32, as torch's tf32 matmul does: the TFLOAT32 maps round, the tensor cores alone would
    truncate. Measured on an H100: 2.9e-4 relative error against float64, 7.7e-4 with truncation."""
    if not _hopper():
        pytest.skip("needs sm_90")
    torch.manual_seed(0)
    A = torch.randn(1, 1024, 1024, device="cuda")
    Bt = torch.randn(1, 1024, 1024, device="cuda")
    D = _tf32_gemm(A, Bt, TF32_CONFIGS[0]).double()
    exact = A.double() @ Bt.double().transpose(1, 2)
    nearest = _tf32_round(A, True).double() @ _tf32_round(Bt, True).double().transpose(1, 2)
    toward_zero = _tf32_round(A, False).double() @ _tf32_round(Bt, False).double().transpose(1, 2)

    def rel(x):
        return float((D - x).norm() / exact.norm())

    assert rel(nearest) < 2e-5 < 1e-4 < rel(toward_zero), (rel(nearest), rel(toward_zero))
    assert rel(exact) < 4e-4, rel(exact)


def test_tf32_routing_in_tc_gemm():
    """tc.gemm's tf32 on sm_90: the table entry with 32-float k-tiles, >= 4 stages, no cluster; an MN-major
    operand is copied K-major only when the other output extent amortizes the copy (checked on batched CPU
    tensors, which take torch's copy)."""
    big = next(iter(SM90_TABLE.values()))
    cfg = op_module._tf32_config(big)
    assert (cfg.blk_k, cfg.stages, cfg.cluster_m) == (32, max(big.stages, 4), 1)
    cfg.validate(4)
    for c in SM90_TABLE.values():                                     # every entry's tf32 form fits
        op_module._tf32_config(c).validate(4)
    big_m = op_module._TF32_COPY_MIN
    A = torch.randn(2, big_m, 64)                                      # row-major: K-major already
    B = torch.randn(2, 64, big_m)                                      # row-major: N-major
    A2, B2 = op_module._k_major_for_tf32(A, B)
    assert A2 is A and B2.stride(-2) == 1 and torch.equal(B2, B)      # B copied K-major, same values
    A_small = torch.randn(2, big_m // 2, 64)
    assert op_module._k_major_for_tf32(A_small, B)[1] is B             # M too small: B left (sm80 path)
    At = torch.randn(2, 64, big_m).transpose(1, 2)                     # M-major A, N >= the bound
    A3, B3 = op_module._k_major_for_tf32(At, B)
    assert A3.stride(-1) == 1 and torch.equal(A3, At) and B3.stride(-2) == 1


@pytest.mark.gpu
def test_tc_gemm_tf32_takes_the_hopper_path(monkeypatch):
    """fp32 operands with TF32 allowed run the Hopper kernel (B row-major copied K-major at M >= the bound,
    through tilecraft's transpose) and match float64 within tf32's bound; a small M stays on sm80."""
    if not _hopper():
        pytest.skip("needs sm_90")
    from tilecraft.gemm import gemm
    seen = _watch_launches(monkeypatch, arg=8)
    for M, N, K, hopper in ((2048, 1024, 512, True), (512, 1024, 512, False)):
        seen.clear()
        A = torch.randn(M, K, device="cuda")
        B = torch.randn(K, N, device="cuda")
        D = gemm(A, B, allow_tf32=True)
        ref = A.double() @ B.double()
        assert float((D.double() - ref).norm() / ref.norm()) < 5e-3
        assert seen == (["tf32"] if hopper else []), (M, seen)
    Bk = torch.randn(1024, 512, device="cuda").t()                     # (K, N) K-major: no copy needed
    seen.clear()
    A = torch.randn(256, 512, device="cuda")
    D = gemm(A, Bk, allow_tf32=True)
    assert seen == ["tf32"]
    ref = A.double() @ Bk.double()
    assert float((D.double() - ref).norm() / ref.norm()) < 5e-3


def test_split_k_reduction_is_a_programmatic_dependent_launch():
    """Parallel split-K on sm90: the splits' kernel lets the stream's next kernel launch early
    (griddepcontrol.launch_dependents) and the reduction, launched with pdl=True, waits for every partial
    (griddepcontrol.wait) before it reads them; without dependent=True (sm80, the mixed-input kernels) it
    does not wait, and a kernel without splits does not trigger."""
    from tilecraft.gemm.tensorop import SplitReduce, splitk_reduce_kernel
    cfg = Sm90Config(128, 128, 64, 6, splits=4)
    W = torch.empty(4, 1, 256, 256)
    args = _compile(cfg, "bfloat16")[1]
    args = args[:8] + (W,) + args[9:]
    src = sm90.sm90_gemm_kernel.source(*args)
    assert src.count("tc::griddep_launch_dependents();") == 1
    assert "griddep" not in sm90.sm90_gemm_kernel.source(*_compile(Sm90Config(128, 128, 64, 6), "bfloat16")[1])
    D = torch.empty(1, 256, 256, dtype=torch.bfloat16)
    red = (W, None, D, None, np.float32(1), np.float32(0), EpilogueSpec(), SplitReduce.threads)
    dep = splitk_reduce_kernel.source(*red, True)
    assert dep.index("tc::griddep_wait();") < dep.index("W[")            # before the first read of a partial
    assert "griddepcontrol.wait" in rt.compile_ptx(dep, arch="sm_90a")
    assert "griddep" not in splitk_reduce_kernel.source(*red)
    # an N-contiguous D with N a multiple of 4: 16-byte loads of 4 partial sums per thread
    big_W, big_D = torch.empty(2, 1, 1024, 1024), torch.empty(1, 1024, 1024)
    assert SplitReduce.elements_per_thread(big_W, big_D) == 4
    assert SplitReduce.elements_per_thread(W, D) == 1                   # 2^16 elements: too few CTAs of 4 each
    assert SplitReduce.elements_per_thread(torch.empty(2, 1, 1024, 1022), torch.empty(1, 1024, 1022)) == 1
    assert SplitReduce.elements_per_thread(big_W, big_D.transpose(1, 2)) == 1
    vec = splitk_reduce_kernel.source(*red, True, 4)
    assert vec.count("reinterpret_cast<const uint4*>(W") == 2 and "/ 4" in vec


def test_split_k_sums_in_the_kernel_when_every_split_is_resident():
    """Split-K whose tiles x splits fit on the SMs (no cluster, no stream-K) sums its partial tiles in the GEMM
    kernel: each consumer warpgroup counts itself in on a flag (release), waits for the others (acquire), sums
    its share of the tile in split order, applies the epilogue and counts itself out (the last puts the flag
    back to 0). With 4 or more splits that divide each consumer's accumulator blocks the shares are blocks
    (sm90._sum_split_blocks: partials in fragment order without the split's own blocks, 16-byte stores and
    loads, a flag per tile and consumer); otherwise rows (sm90._reduce_tile: a flag per tile). Every tiling compiles without spills,
    including tiles narrower and wider than the 128 columns a pass of rows covers."""
    from tilecraft.gemm.sm90 import fused_split_reduction, split_blocks, split_workspace
    mid = Sm90Config(128, 128, 64, 6, splits=8)
    assert fused_split_reduction(mid, 128, 132) and not fused_split_reduction(mid, 136, 132)
    assert not fused_split_reduction(replace(mid, cluster_m=2), 64, 132)
    assert not fused_split_reduction(Sm90Config(128, 128, 64, 6), 64, 132)
    blocks = [mid, Sm90Config(128, 64, 64, 8, splits=4), Sm90Config(64, 128, 64, 8, consumers=1, splits=16),
              replace(mid, splits=16)]
    rows = [replace(THREE_CONSUMERS, splits=3), Sm90Config(64, 192, 64, 6, consumers=1, splits=2),
            Sm90Config(128, 256, 64, 4, splits=2), replace(mid, splits=5), replace(mid, splits=2)]
    assert all(split_blocks(c) for c in blocks) and not any(split_blocks(c) for c in rows)
    ep = EpilogueSpec(read_c=True, unit_alpha=False, bias="m", activation="silu")
    for cfg in blocks + rows:
        for e, full in ((ep, False), (ep, True)) + (((EpilogueSpec(), True),) if cfg in blocks else ()):
            args = list(_compile(cfg, "bfloat16", ep=e, full=full)[1])
            args[8] = split_workspace(args[3], cfg, 4)                        # W
            args[14:] = [None, torch.zeros(132 * cfg.consumers, dtype=torch.int32)]  # no TMA store; the flags
            src = sm90.sm90_gemm_kernel.source(*args)
            order = [src.index(f) for f in ("tc::flag_add_release(", "tc::flag_wait_at_least(", "tc::flag_count_reset(")]
            assert order == sorted(order), cfg.name
            if e.activation == "silu":
                assert order[1] < src.index("tc::silu(") < order[2], cfg.name
            S = cfg.splits
            if split_blocks(cfg):
                n = cfg.rows // 64 * cfg.blk_n // 8                          # 4-value blocks per consumer thread
                assert f"tc::flag_wait_at_least(flags + flag, {S});" in src
                assert f"flag_count_reset(flags + flag, {2 * S})" in src
                # the partial: 16-byte stores of every block but the split's own, in each split's branch
                assert src.count("= *reinterpret_cast<const uint4*>(tCrC") == S * (n - n // S)
                assert src.count("reinterpret_cast<const uint4*>(W + ") == (S - 1) * n  # the others' blocks
            else:
                parts = S * cfg.consumers
                assert f"tc::flag_wait_at_least(flags + tile, {parts});" in src
                assert f"flag_count_reset(flags + tile, {2 * parts})" in src
                if full and 128 % (cfg.blk_n // 4) == 0:                    # whole tiles: 4 columns per thread
                    assert src.count("reinterpret_cast<const uint4*>(W") >= S, cfg.name
            k = sm90.sm90_gemm_kernel.compile(*args, arch="sm_90a")
            assert k.resources.spill_store_bytes == 0 and "serialized" not in k.module.log, (cfg.name, k.resources)
    assert split_workspace(torch.empty(1, 512, 512), mid, 16).shape == (8 * 16 * 128 * 128,)
    assert split_workspace(torch.empty(1, 512, 512), replace(mid, splits=2), 16).shape == (2, 1, 512, 512)
