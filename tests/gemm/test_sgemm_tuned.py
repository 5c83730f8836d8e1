"""The tuned SIMT SGEMM (tilecraft.gemm.simt_tuned): every tiling compiled for sm_80 and sm_90a without
spills within its launch bound, SASS made of LDS.128 / LDG.128 / FFMA, the generated source's
structure; results on the CPU (the generated C++ run by the host compiler, see emulate.py) and on a GPU
against float64 on random odd shapes."""
from __future__ import annotations

import random
import re

import pytest
import torch
from fp32_gemm_check import check_fp32_gemm

import emulate
import sass
from tilecraft import runtime as rt
from tilecraft.gemm import (CONFIGS, DEFAULT, FALLBACK, SMALL, THIN, SgemmConfig, pick_sgemm_config, sgemm_tuned,
                            sgemm_tuned_args, sgemm_tuned_kernel)
from tilecraft.gemm.simt_tuned import MAX_SPLITS, SPLIT_MIN_K, is_full, pick_sgemm_splits, whole_splits

NAMES = list(CONFIGS)
MAJORS = [("k", "k", "n"), ("m", "n", "m"), ("m", "k", "n"), ("k", "n", "m")]  # contiguous modes of A, B, C


def operands(M: int, N: int, K: int, majors: tuple[str, str, str], device: str = "cpu", fill=torch.zeros):
    """A (M,K), B (K,N), C (M,N) float32 with the given contiguous modes."""
    a, b, c = majors
    A = fill(K, M, device=device).t() if a == "m" else fill(M, K, device=device)
    B = fill(K, N, device=device) if b == "n" else fill(N, K, device=device).t()
    C = fill(N, M, device=device).t() if c == "m" else fill(M, N, device=device)
    return A, B, C


def full_args(cfg: SgemmConfig, majors=("k", "k", "n")):
    A, B, C = operands(2 * cfg.blk_m, 2 * cfg.blk_n, 4 * cfg.blk_k, majors)
    args, grid, block = sgemm_tuned_args(A, B, C, 1.0, 0.0, cfg)
    assert args[-1] is True
    return args


def odd_args(cfg: SgemmConfig):
    A, B, C = operands(1000, 999, 77, ("k", "k", "n"))
    args, _, _ = sgemm_tuned_args(A, B, C, 1.0, 0.0, cfg)
    assert args[-1] is False
    return args


@pytest.fixture(scope="module")
def compiled():
    out = {}
    for name, cfg in CONFIGS.items():
        for trace, args in (("full", full_args(cfg)), ("odd", odd_args(cfg))):
            for arch in ("sm_80", "sm_90a"):
                out[name, trace, arch] = (sgemm_tuned_kernel.source(*args), sgemm_tuned_kernel.compile(*args, arch=arch))
    return out


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("trace", ["full", "odd"])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_compiles_within_the_launch_bound_without_spills(compiled, name, trace, arch):
    cfg = CONFIGS[name]
    _, kernel = compiled[name, trace, arch]
    res = kernel.resources
    assert not res.spills and res.stack_frame_bytes == 0
    min_blocks = cfg.min_blocks if trace == "full" else 1  # the predicated trace asks for 1 CTA/SM's budget
    assert res.registers <= min(255, 65536 // (cfg.threads * min_blocks))
    # S stages of padded k-rows per operand (the last row's pad is not allocated), B 128-byte aligned;
    # past 48 KB the smem is dynamic (chosen at launch)
    stages = cfg.smem_stages(trace == "full")
    a_bytes = (stages * cfg.blk_k * (cfg.blk_m + cfg.pad) - cfg.pad) * 4
    b_bytes = (stages * cfg.blk_k * (cfg.blk_n + cfg.pad) - cfg.pad) * 4
    args = full_args(cfg) if trace == "full" else odd_args(cfg)
    assert res.smem_bytes + sgemm_tuned_kernel.specialize(*args).smem_bytes == -(-a_bytes // 128) * 128 + b_bytes


@pytest.mark.skipif(sass.cuobjdump() is None, reason="no cuobjdump")
@pytest.mark.parametrize("name", NAMES)
def test_sass_main_loop_is_ffma_fed_by_128_bit_loads(compiled, name):
    cfg = CONFIGS[name]
    text = sass.sass(compiled[name, "full", "sm_90a"][1].module.cubin)
    vals_m, vals_n = cfg.blk_m // cfg.thr_m, cfg.blk_n // cfg.thr_n
    ffma_per_tile = vals_m * vals_n * cfg.blk_k
    n, ffma = sass.hottest_loop(text)
    assert ffma == ffma_per_tile  # the k-tile loop: every FFMA of the tile, unrolled, once
    # ... and little else (LDS.128, 8 STS, 2 LDG.128, one barrier, addresses); a 4x8 thread tile (THIN) reads
    # 3 LDS.128 per 32 FFMA, an 8x8 one 4 per 64
    assert ffma / n > (0.85 if vals_m * vals_n >= 64 else 0.8)
    # operand fragments: one LDS.128 per 4 values per k-step; no scalar smem loads (ptxas puts never
    # executed `@!PT LDS RZ, [RZ]` before cp.async copies), no local memory
    assert sass.count(text, "LDS.128") >= (vals_m + vals_n) // 4 * cfg.blk_k
    assert sass.count(text, "LDS") == text.count("@!PT LDS RZ, [RZ]") and sass.count(text, "LDL", prefix=True) == 0
    if cfg.cp_async:  # the K-major operands (these majors) one float per cp.async, no register staging
        assert sass.count(text, "LDGSTS.E") == cfg.stages * (cfg.blk_m + cfg.blk_n) * cfg.blk_k // cfg.threads
        assert sass.count(text, "LDG.E.128.CONSTANT") == 0 and sass.count(text, "LDG.E.CONSTANT") == 0
    else:
        assert sass.count(text, "LDG.E.128.CONSTANT") >= 2 and sass.count(text, "LDG.E.CONSTANT") == 0
    assert sass.count(text, "BAR.SYNC.DEFER_BLOCKING") == 2  # prologue + one per k-tile
    assert sass.count(text, "STG.E.128") == 2 * vals_m * vals_n // 4  # epilogue, beta == 0 and beta != 0


@pytest.mark.parametrize("name", NAMES)
def test_source_structure(compiled, name):
    cfg = CONFIGS[name]
    src, _ = compiled[name, "full", "sm_80"]
    vals_m, vals_n = cfg.blk_m // cfg.thr_m, cfg.blk_n // cfg.thr_n
    assert f"__launch_bounds__({cfg.threads}, {cfg.min_blocks}) sgemm_tuned_kernel(" in src
    assert src.count("for (int k_tile = 0; k_tile < k_tile_max; ++k_tile) {") == 1
    assert src.count("__syncthreads();") == 2
    assert f"const int k_tile_max = K / {cfg.blk_k};" in src
    copies = ("(CPY,CPY_REPS,k)", "(CPY,CPY_REPS,S)") if cfg.cp_async else ("(VEC,REPS,k)", "(VEC,REPS,2)")
    for comment in ("(BLK_M,BLK_K,k)", "(BLK_N,BLK_K,k)", "(BLK_M,BLK_N)", *copies,
                    "(THR_M_VALS,BLK_K,S)", "(THR_N_VALS,BLK_K,S)", "(THR_M_VALS,THR_N_VALS)"):
        assert f"// {comment}" in src, comment
    assert f"float tCrC[{vals_m * vals_n}];" in src
    # every operand fragment load is a 128-bit smem read; every FFMA one accumulator
    frag_loads = re.findall(r"\*reinterpret_cast<uint4\*>\(tCr[AB][^)]*\) = \*reinterpret_cast<const uint4\*>\(tCs[AB]", src)
    assert len(frag_loads) == (vals_m + vals_n) // 4 * (cfg.blk_k + 1)
    assert len(re.findall(r"tCrC\[\d+\] \+= tCrA\[\d+\] \* tCrB\[\d+\];", src)) == vals_m * vals_n * cfg.blk_k
    # the k-tile's stages are pointer variables, declared once per k-tile; the loop's fragment loads read
    # them at constant offsets (NVRTC 13.0 recomputed `read * STAGE + offset` at every LDS.128 of one operand)
    loop = src[src.index("for (int k_tile"):]
    nxt = "write" if not cfg.cp_async else "next"
    for op in "AB":
        assert re.search(rf"float\* tCs{op}_read = tCs{op} \+ read \* \d+;", loop), op
        assert re.search(rf"float\* tCs{op}_{nxt} = tCs{op} \+ ", loop), op
    loop_loads = re.findall(r"= \*reinterpret_cast<const uint4\*>\((tCs[AB]\w*)", loop)
    assert len(loop_loads) == (vals_m + vals_n) // 4 * cfg.blk_k
    assert all(p.endswith(("_read", "_write", "_next")) for p in loop_loads), set(loop_loads)
    # no predicates in the full trace; the odd trace predicates every load and store
    assert "?" not in src and " < M" not in src
    # the k-step fence: one compiler barrier per k-step of the main loop, between its loads and its FFMAs
    assert loop.count('asm volatile("" ::: "memory");') == (cfg.blk_k if cfg.fence else 0)
    odd, _ = compiled[name, "odd", "sm_80"]
    assert "? " in odd and "< M" in odd and "const int k_tile_max = (K + " in odd


@pytest.mark.parametrize("majors", MAJORS, ids=["".join(m) for m in MAJORS])
def test_full_trace_vectorizes_every_major(majors):
    src = sgemm_tuned_kernel.source(*full_args(SgemmConfig(), majors))  # register-staged copies, 8x8 per thread
    a, b, c = majors
    loads = re.findall(r"\*reinterpret_cast<uint4\*>\(t[AB]r[AB]\) = \*reinterpret_cast<const uint4\*>\(t[AB]g[AB]", src)
    assert len(loads) == 4  # prologue + loop, A and B: one LDG.128 each per k-tile
    # an m/n-major operand lands in smem as one 128-bit store, a k-major one as 4 transposing stores
    for op, major in (("A", a), ("B", b)):
        vec_store = f"*reinterpret_cast<uint4*>(t{op}s{op}" in src
        assert vec_store == (major in "mn")
    assert src.count("*reinterpret_cast<uint4*>(tCgC") == 2 * 64 // 4  # beta == 0 and beta != 0


@pytest.mark.skipif(sass.cuobjdump() is None, reason="no cuobjdump")
@pytest.mark.parametrize("name", [DEFAULT.name] + [n for n, c in CONFIGS.items() if c.opt_level == 1])
def test_ffma_operands_avoid_register_bank_conflicts(compiled, name):
    # dsl.gemm's serpentine runs leave one operand of (nearly) every FFMA in the reuse cache, and these
    # tilings' allocations keep the other two in different banks (module docstring); ptxas -O3 on the
    # 8x16 tilings leaves 28-40% same-bank pairs
    reads = sass.ffma_reads(sass.sass(compiled[name, "full", "sm_90a"][1].module.cubin))
    assert reads["ffma"] >= 512
    assert reads["three_same"] == 0, reads
    assert reads["pair_same"] <= 0.05 * reads["ffma"], reads
    assert reads["three"] <= 0.25 * reads["ffma"], reads


@pytest.mark.skipif(sass.cuobjdump() is None, reason="no cuobjdump")
@pytest.mark.parametrize("name", [n for n, c in CONFIGS.items() if c.fence or c.opt_level == 1])
def test_k_step_fence_issues_fragment_loads_a_step_ahead(compiled, name):
    # with the fence the LDS.128 of step k+1's fragments issue before all of step k's FFMAs (ptxas may still
    # hoist a few of the k-tile's last FFMAs above the barrier and the first loads of the next stage: NVRTC
    # 13.0 does for one load); without it -O1 issues some a few instructions before their first use
    cfg = CONFIGS[name]
    text = sass.sass(compiled[name, "full", "sm_90a"][1].module.cubin)
    vals_m, vals_n = cfg.blk_m // cfg.thr_m, cfg.blk_n // cfg.thr_n
    distances = sass.load_use_distances(text)
    assert len(distances) == (vals_m + vals_n) // 4 * cfg.blk_k
    if cfg.fence:
        assert sum(d < vals_m * vals_n for d in distances) <= 2, sorted(distances)[:8]
    else:
        assert min(distances) < 20, sorted(distances)[:8]


def test_opt_level_reaches_ptxas():
    # the -O1 tilings name the flag in their source and compile with it: the same source at ptxas's
    # default -O3 gives another cubin (and more registers: -O1 keeps the FFMAs' order)
    cfg = CONFIGS["128x128x8_w8x4_t128_b2_a3_O1_f"]
    assert cfg.opt_level == 1 and SgemmConfig().opt_level == 3
    args = full_args(cfg)
    spec = sgemm_tuned_kernel.specialize(*args)
    assert spec.ptxas_options == ("-O1",) and "// ptxas options: -O1\n" in spec.source
    at_o1 = sgemm_tuned_kernel.compile(*args, arch="sm_90a")
    at_o3 = rt.compile(spec.source, arch="sm_90a", name="sgemm_o3.cu")
    assert at_o1.module.cubin != at_o3.cubin
    assert at_o1.resources.registers < at_o3.kernel(spec.name).resources.registers
    assert "ptxas options" not in sgemm_tuned_kernel.source(*full_args(SgemmConfig()))
    with pytest.raises(ValueError, match="opt_level"):
        SgemmConfig(opt_level=4).validate()


def test_configs_validate_and_reject_bad_tilings():
    for cfg in CONFIGS.values():
        cfg.validate()
    with pytest.raises(ValueError, match="lanes_m"):
        SgemmConfig(lanes_m=4, lanes_n=4).validate()
    with pytest.raises(ValueError, match="multiple"):
        SgemmConfig(blk_m=96).validate()


def test_pick_sgemm_config_takes_default_for_whole_tiles_else_the_fallback():
    A, B, C = operands(2 * DEFAULT.blk_m, 2 * DEFAULT.blk_n, 4 * DEFAULT.blk_k, ("k", "n", "n"))
    assert pick_sgemm_config(A, B, C, sms=4) is DEFAULT
    for m, n, k in ((DEFAULT.blk_m, DEFAULT.blk_n + 128, 64), (130, 256, 64), (128, 256, 12)):
        A, B, C = operands(m, n, k, ("k", "n", "n"))
        assert pick_sgemm_config(A, B, C, sms=1) is FALLBACK
    A, B, C = operands(128, 384, 16, ("k", "k", "n"))
    assert is_full(A, B.t(), C, FALLBACK)  # N = 3 x 128: whole tiles of the fallback
    A, B, C = operands(128, 256, 68, ("k", "n", "n"))
    assert pick_sgemm_config(A[:, 4:68], B[4:68], C, sms=1) is DEFAULT
    assert pick_sgemm_config(A[:, 1:65], B[1:65], C, sms=1) is FALLBACK  # A's rows start off 16-byte alignment


@pytest.mark.parametrize("m,n,pick", [(1024, 1024, SMALL), (1536, 1536, SMALL), (2048, 2048, DEFAULT),
                                      (1000, 1000, SMALL), (3000, 2000, FALLBACK), (64, 8192, SMALL)])
def test_pick_sgemm_config_takes_the_small_tile_where_the_ctas_miss_the_sms(m, n, pick):
    """SMALL (64x128, 4 CTAs per SM) where DEFAULT's or FALLBACK's CTAs reach fewer than 3/4 of 132 SMs (1536²:
    72 of DEFAULT's), the pick otherwise (2048²: 128)."""
    A, B, C = operands(m, n, 64, ("k", "n", "n"))
    assert pick_sgemm_config(A, B, C, sms=132) is pick
    assert pick_sgemm_config(A, B, C) is pick                             # (132 SMs off a GPU)


@pytest.mark.parametrize("m,n,k", [(32, 4096, 4096), (17, 1000, 1000), (1, 8, 8), (20, 65536, 64)])
def test_pick_sgemm_config_takes_the_thin_tile_up_to_32_rows(m, n, k):
    """THIN (32x128) for M <= 32 whatever N, K and the layouts; 33 rows take the other rules."""
    A, B, C = operands(m, n, k, ("k", "n", "n"))
    assert pick_sgemm_config(A, B, C, sms=132) is THIN
    A, B, C = operands(33, n, k, ("k", "n", "n"))
    assert pick_sgemm_config(A, B, C, sms=132) in (SMALL, FALLBACK, DEFAULT)


@pytest.mark.parametrize("m,n,pick", [(80, 4096, THIN), (96, 6144, THIN), (160, 4096, THIN), (48, 4096, SMALL),
                                      (64, 4096, SMALL), (40, 11008, SMALL), (96, 65536, FALLBACK)])
def test_pick_sgemm_config_takes_the_thin_tile_where_it_computes_fewer_rows(m, n, pick):
    """Where the small grids take SMALL, THIN instead where 32-row tiles compute fewer rows (M = 96: 96 against
    128); not where both compute the same (M = 48, 64), nor where the grid is large enough for FALLBACK."""
    A, B, C = operands(m, n, 64, ("k", "n", "n"))
    assert pick_sgemm_config(A, B, C, sms=132) is pick


def test_whole_splits_leave_no_split_empty():
    assert whole_splits(10, 4) == 4                                       # 3, 3, 3, 1
    assert whole_splits(9, 4) == 3                                        # 3, 3, 3 (a fourth would be empty)
    assert whole_splits(3, 16) == 3 and whole_splits(1, 8) == 1 and whole_splits(0, 4) == 1
    for k_tiles in range(1, 200):
        for want in range(1, 20):
            s = whole_splits(k_tiles, want)
            per = -(-k_tiles // s)
            assert 1 <= s <= want and (s - 1) * per < k_tiles <= s * per


@pytest.mark.parametrize("m,n,k,splits", [(64, 8192, 8192, 8), (1, 4096, 4096, 12), (512, 512, 512, 8),
                                          (1024, 1024, 1024, 4), (1000, 1000, 1000, 3), (1536, 1536, 1536, 2),
                                          (2048, 2048, 2048, 1), (64, 8192, 64, 1), (16, 16, 100000, MAX_SPLITS),
                                          (256, 256, 256, 4), (64, 1024, 32768, 66), (32, 128, 65536, 128),
                                          (256, 512, 8192, 32)])
def test_pick_sgemm_splits_fills_the_idle_slots(m, n, k, splits):
    """Split-K where the pick's tiles leave CTA slots empty (4 per SM for SMALL's unpredicated trace, 3 for its
    predicated one): about as many CTAs as slots, each split of at least SPLIT_MIN_K, at most MAX_SPLITS; none for
    a short K or enough tiles (2048³: DEFAULT's 128 tiles, one per SM)."""
    A, B, C = operands(m, n, k, ("k", "n", "n"))
    cfg = pick_sgemm_config(A, B, C, sms=132)
    full = is_full(A, B.t(), C, cfg)
    assert full is (m % cfg.blk_m == 0 and n % cfg.blk_n == 0)
    assert pick_sgemm_splits(m, n, k, cfg, 132, full) == splits
    assert splits == 1 or k // splits >= SPLIT_MIN_K
    tiles, slots = -(-m // cfg.blk_m) * -(-n // cfg.blk_n), 132 * (cfg.min_blocks if full else cfg.min_blocks - 1)
    # (whole_splits may take a few fewer, so that none is empty: 1024 k-tiles make 32 splits of 32, not 33)
    assert splits in (1, MAX_SPLITS, k // SPLIT_MIN_K) or abs(tiles * splits - slots) <= max(tiles / 2, slots / 10)


def test_split_args_check_the_workspace():
    A, B, _ = operands(64, 128, 80, ("k", "n", "n"))
    W = torch.empty(4, 64, 128)
    args, grid, block = sgemm_tuned_args(A, B, W, 1.0, 0.0, SMALL, 4)
    assert grid == (1, 1, 4) and args[-1] == 4 and args[-2] is True     # 10 k-tiles in 4 splits, the full trace
    with pytest.raises(ValueError, match="workspace"):
        sgemm_tuned_args(A, B, torch.empty(64, 128), 1.0, 0.0, SMALL, 4)
    assert sgemm_tuned_args(A, B, torch.empty(5, 64, 128), 1.0, 0.0, SMALL, 5)[1] == (1, 1, 5)  # 2 k-tiles each
    for bad in (6, 7):                                                    # 2 k-tiles each: the sixth, seventh empty
        with pytest.raises(ValueError, match=f"do not make {bad} splits"):
            sgemm_tuned_args(A, B, torch.empty(bad, 64, 128), 1.0, 0.0, SMALL, bad)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted({SMALL.name, DEFAULT.name, FALLBACK.name, THIN.name}))
def test_split_k_compiles_without_spills(name, arch):
    cfg = CONFIGS[name]
    for full in (True, False):
        M, N, K = (2 * cfg.blk_m, 2 * cfg.blk_n, 64 * cfg.blk_k) if full else (1000, 999, 777)
        A, B, _ = operands(M, N, K, ("k", "n", "n"))
        s = whole_splits(-(-K // cfg.blk_k), 4)
        args, _, _ = sgemm_tuned_args(A, B, torch.empty(s, M, N), 1.0, 0.0, cfg, s)
        assert args[-2] is full
        res = sgemm_tuned_kernel.compile(*args, arch=arch).resources
        assert not res.spills and res.stack_frame_bytes == 0
        assert res.registers <= min(255, 65536 // (cfg.threads * (cfg.min_blocks if full else 1)))


def test_sgemm_tuned_checks_its_inputs():
    A, B, C = operands(4, 5, 6, ("k", "k", "n"))
    with pytest.raises(ValueError, match="CUDA device"):
        sgemm_tuned(A, B)
    with pytest.raises(TypeError, match="float32"):
        sgemm_tuned(A.double(), B)


# ----------------------------------------------------------------------------- results on the CPU

def _run_emulated(cfg, M, N, K, majors, alpha, beta, seed=0):
    torch.manual_seed(seed)
    A, B, C = operands(M, N, K, majors, fill=torch.randn)
    C0 = C.clone()
    args, grid, block = sgemm_tuned_args(A, B, C, alpha, beta, cfg)
    emulate.launch(sgemm_tuned_kernel, grid, block, *args)
    check_fp32_gemm(A, B, C0, C, alpha, beta)
    return args[-1]


@pytest.mark.skipif(not emulate.available(), reason="no host C++ compiler")
@pytest.mark.parametrize("majors", MAJORS, ids=["".join(m) for m in MAJORS])
def test_emulated_default_tiling_all_majors(majors):
    assert _run_emulated(DEFAULT, 2 * DEFAULT.blk_m, DEFAULT.blk_n, 3 * DEFAULT.blk_k, majors, 1.5, 0.5) is True
    assert _run_emulated(DEFAULT, 130, 67, 13, majors, 1.0, 0.0) is False


@pytest.mark.skipif(not emulate.available(), reason="no host C++ compiler")
@pytest.mark.parametrize("majors", MAJORS, ids=["".join(m) for m in MAJORS])
def test_emulated_cp_async_all_majors(majors):
    # 16-byte cp.async for m/n-major operands, 4-byte transposing ones for K-major; K of 1, 2 and 5
    # k-tiles runs the 3-stage prologue and the clamped refetches past the end
    cfg = SgemmConfig(cp_async=True, stages=3)
    for k_tiles in (1, 2, 5):
        assert _run_emulated(cfg, 128, 256, k_tiles * cfg.blk_k, majors, 1.5, 0.5, seed=k_tiles) is True


@pytest.mark.skipif(not emulate.available(), reason="no host C++ compiler")
@pytest.mark.parametrize("name", NAMES)
def test_emulated_every_tiling(name):
    cfg = CONFIGS[name]
    n_tiles = cfg.raster if cfg.raster > 1 else 1  # a rasterized grid needs whole groups of n-tiles
    assert _run_emulated(cfg, cfg.blk_m, n_tiles * cfg.blk_n, 3 * cfg.blk_k, ("k", "k", "n"), 1.0, -1.0) is True
    assert _run_emulated(cfg, cfg.blk_m + 1, cfg.blk_n - 3, 2 * cfg.blk_k + 5, ("m", "k", "n"), 1.0, 0.0) is False


@pytest.mark.skipif(not emulate.available(), reason="no host C++ compiler")
@pytest.mark.parametrize("name", sorted({SMALL.name, DEFAULT.name, FALLBACK.name, THIN.name}))
def test_emulated_split_k_partials(name):
    """Each split sums exactly its k-tiles (ceil(k-tiles / splits) each) into its slice of the workspace: the
    unpredicated trace (10 k-tiles in 4 splits: 3, 3, 3, 1) and the predicated one (a ragged K in 3)."""
    cfg = CONFIGS[name]
    for M, N, K, splits, full in ((cfg.blk_m, cfg.blk_n, 10 * cfg.blk_k, 4, True),
                                  (cfg.blk_m + 3, cfg.blk_n - 5, 9 * cfg.blk_k + 3, 3, False)):
        torch.manual_seed(splits)
        A, B, _ = operands(M, N, K, ("m", "k", "n"), fill=torch.randn)
        W = torch.full((splits, M, N), float("nan"))
        args, grid, block = sgemm_tuned_args(A, B, W, 1.0, 0.0, cfg, splits)
        assert args[-2] is full
        emulate.launch(sgemm_tuned_kernel, grid, block, *args)
        per = -(-K // cfg.blk_k) // splits + (-(-K // cfg.blk_k) % splits > 0)
        for i in range(splits):
            k = slice(i * per * cfg.blk_k, (i + 1) * per * cfg.blk_k)
            check_fp32_gemm(A[:, k], B[k], torch.zeros(M, N), W[i], 1.0, 0.0)


# ----------------------------------------------------------------------------- GPU

@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_gpu_random_odd_shapes(name):
    cfg = CONFIGS[name]
    rng = random.Random(name)
    shapes = [(1, 1, 1), (1000, 1, 3), (1, 999, 1000)] + [(rng.randint(1, 1000), rng.randint(1, 1000),
                                                          rng.randint(1, 1000)) for _ in range(5)]
    torch.manual_seed(0)
    for i, (M, N, K) in enumerate(shapes):
        majors = MAJORS[i % 4]
        A, B, C = operands(M, N, K, majors, "cuda", torch.randn)
        C0 = C.clone()
        alpha, beta = (1.5, -0.5) if i % 2 else (1.0, 0.0)
        assert sgemm_tuned(A, B, C, alpha, beta, config=cfg) is C
        check_fp32_gemm(A, B, C0, C, alpha, beta)


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_gpu_full_tiles_every_major(name):
    cfg = CONFIGS[name]
    torch.manual_seed(1)
    for majors in MAJORS:
        M, N, K = 2 * cfg.blk_m, 2 * cfg.raster * cfg.blk_n, 64 * cfg.blk_k
        A, B, C = operands(M, N, K, majors, "cuda", torch.randn)
        assert sgemm_tuned_args(A, B, C, 1.0, 0.0, cfg)[0][-1] is True
        C0 = C.clone()
        sgemm_tuned(A, B, C, 2.0, 0.5, config=cfg)
        check_fp32_gemm(A, B, C0, C, 2.0, 0.5)


@pytest.mark.gpu
def test_gpu_beta_zero_ignores_nan_and_views():
    M, N, K = 300, 257, 131
    A = torch.randn(M + 1, K + 3, device="cuda")[1:, 3:]  # an unaligned view: the predicated trace
    B = torch.randn(K, N, device="cuda")
    C = torch.full((M, N), float("nan"), device="cuda")
    sgemm_tuned(A, B, C, 1.0, 0.0)
    check_fp32_gemm(A, B, torch.zeros_like(C), C, 1.0, 0.0)
    A2, B2 = torch.randn(512, 64, device="cuda"), torch.randn(64, 256, device="cuda")
    C2 = torch.full((512, 256), float("nan"), device="cuda")  # the full trace
    sgemm_tuned(A2, B2, C2, 1.0, 0.0)
    check_fp32_gemm(A2, B2, torch.zeros_like(C2), C2, 1.0, 0.0)


@pytest.mark.gpu
def test_gpu_small_shapes_take_the_small_tile():
    """sgemm_tuned's own pick at shapes whose DEFAULT / FALLBACK CTAs miss the SMs: SMALL, right against float64
    (unpredicated and predicated traces)."""
    torch.manual_seed(4)
    for m, n, k in ((256, 256, 256), (1000, 1000, 1000), (64, 8192, 1024), (1536, 1536, 1536)):
        A, B, C = operands(m, n, k, ("k", "n", "n"), "cuda", torch.randn)
        assert pick_sgemm_config(A, B, C) is SMALL
        C0 = C.clone()
        assert sgemm_tuned(A, B, C, 1.5, -0.5) is C
        check_fp32_gemm(A, B, C0, C, 1.5, -0.5)


@pytest.mark.gpu
def test_gpu_thin_tile_for_few_rows():
    """sgemm_tuned's pick at M = 17..32 (THIN with its splits; tc.gemm's IEEE fp32 path from 17 rows) and at 96
    rows of a small grid: whole tiles and ragged ones, both B majors, alpha / beta, against float64."""
    torch.manual_seed(6)
    for i, (M, N, K) in enumerate([(32, 4096, 4096), (17, 1000, 1000), (20, 777, 2001), (32, 128, 20000),
                                   (96, 700, 3001)]):
        majors = ("k", "n" if i % 2 else "k", "n")
        A, B, C = operands(M, N, K, majors, "cuda", torch.randn)
        assert pick_sgemm_config(A, B, C) is THIN
        alpha, beta = (1.5, -0.5) if i % 2 else (1.0, 0.0)
        C0 = C.clone() if beta else torch.zeros_like(C)
        assert sgemm_tuned(A, B, C, alpha, beta) is C
        check_fp32_gemm(A, B, C0, C, alpha, beta)


@pytest.mark.gpu
def test_gpu_split_k():
    """sgemm_tuned's split-K against float64: the pick's splits (M = 64 and 1 over long K), explicit splits of the
    three tilings on odd shapes (predicated), every operand major, alpha / beta with C read, and beta 0 with a C
    of NaN (not read); the splits' sum keeps the fp32 bound of one K-term dot product."""
    torch.manual_seed(5)
    cases = [(64, 8192, 4096, ("k", "n", "n"), None, None), (1, 4096, 4096, ("k", "k", "n"), None, None),
             (1000, 1000, 1000, ("m", "n", "m"), None, None), (77, 300, 2001, ("k", "k", "m"), SMALL, 5),
             (130, 257, 999, ("m", "n", "n"), FALLBACK, 3), (256, 512, 4096, ("k", "n", "n"), DEFAULT, 8)]
    for i, (M, N, K, majors, cfg, splits) in enumerate(cases):
        A, B, C = operands(M, N, K, majors, "cuda", torch.randn)
        if splits is None:
            pick = pick_sgemm_config(A, B, C)
            sms = torch.cuda.get_device_properties(A.device).multi_processor_count
            assert pick_sgemm_splits(M, N, K, pick, sms, is_full(A, B.t(), C, pick)) > 1
        alpha, beta = (1.5, -0.5) if i % 2 else (1.0, 0.0)
        if beta == 0:
            C.fill_(float("nan"))
        C0 = C.clone() if beta else torch.zeros_like(C)
        assert sgemm_tuned(A, B, C, alpha, beta, config=cfg, splits=splits) is C
        check_fp32_gemm(A, B, C0, C, alpha, beta)


@pytest.mark.gpu
def test_gpu_plans_are_reused_per_signature():
    """A second call of one signature reuses the plan (no new entry) with its own data, alpha, beta and C, split or
    not; alpha 1 or beta 0 and a C given make other signatures; clear_plans forgets them."""
    import tilecraft as tc
    from tilecraft.gemm import simt_tuned

    tc.gemm.clear_plans()
    torch.manual_seed(8)
    for M, N, K in ((32, 1024, 4096), (256, 512, 64)):                   # THIN in splits; SMALL unsplit
        A, B, C = operands(M, N, K, ("k", "n", "n"), "cuda", torch.randn)
        cfg = pick_sgemm_config(A, B, C)
        sms = torch.cuda.get_device_properties(A.device).multi_processor_count
        split = pick_sgemm_splits(M, N, K, cfg, sms, is_full(A, B.t(), C, cfg)) > 1
        assert split == (M == 32)
        size = len(simt_tuned._PLANS)
        outs = []
        for alpha in (2.0, -0.5):                                         # one signature (alpha not 1)
            A, B = torch.randn_like(A), torch.randn_like(B)
            outs.append((A, B, alpha, sgemm_tuned(A, B, alpha=alpha)))
        assert len(simt_tuned._PLANS) == size + 1
        for A, B, alpha, D in outs:
            check_fp32_gemm(A, B, torch.zeros_like(D), D, alpha, 0.0)
        for alpha, beta in ((1.0, 0.5), (1.5, -1.0)):                    # C read: one more signature each
            C0 = torch.randn_like(C)
            D = C0.clone()
            assert sgemm_tuned(A, B, D, alpha, beta) is D
            check_fp32_gemm(A, B, C0, D, alpha, beta)
        assert len(simt_tuned._PLANS) == size + 3
    tc.gemm.clear_plans()
    assert not simt_tuned._PLANS


@pytest.mark.gpu
def test_gpu_split_k_rejects_bad_counts():
    A, B = torch.randn(64, 512, device="cuda"), torch.randn(512, 128, device="cuda")
    for bad in (0, -2, 2.0, True):
        with pytest.raises(ValueError, match="splits"):
            sgemm_tuned(A, B, splits=bad)
    C = sgemm_tuned(A, B, splits=1000)                                    # more than the 64 k-tiles: 64 splits
    check_fp32_gemm(A, B, torch.zeros_like(C), C, 1.0, 0.0)
