"""tc.gemm's swapped problem (op._swapped_run): 16-bit products of few rows (SWAP_ROWS), and of ragged rows where
its tiles are estimated faster (pick_ragged_swap), on sm_90 run the Hopper kernel on D^T = B^T A^T, the weight as
wgmma's A operand and the rows of x as its N, D written through a column-major view (by TMA from M-major buffers
with ``store_mn``). And the Hopper kernel's 16-bit stores of single values (a column-major or ragged D without TMA),
which keep the sums in 32-bit registers so that ptxas does not serialize the wgmmas. CPU: the pick, the dispatch
decisions, compiles; GPU: float64 checks."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tilecraft.gemm import Sm90Config, op, sm90  # noqa: E402
from tilecraft.gemm.op import SWAP_FP8_ROWS, SWAP_ROWS, SWAP_WIDE_ROWS, pick_ragged_swap, pick_swap_config  # noqa: E402
from tilecraft.gemm.tensorop import EpilogueSpec  # noqa: E402

gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
FULL_EP = EpilogueSpec(read_c=True, unit_alpha=False, bias="m", activation="gelu")


def _b(K: int, N: int, n_major: bool, dtype: Any, device: str = "cpu", seed: int = 0) -> Any:
    """B (K, N), N-contiguous (``x @ W``) or K-contiguous (``x @ W.t()``, an nn.Linear weight)."""
    g = torch.Generator().manual_seed(seed)
    if n_major:
        return torch.randn(K, N, generator=g).to(dtype).to(device)
    return torch.randn(N, K, generator=g).to(dtype).to(device).t()


def test_pick_swap_config() -> None:
    """64 rows of B^T per tile, wgmma N the rows of x rounded up, two splits of a long K where the tiles fill at most
    half of the SMs; D stored from the registers."""
    c = pick_swap_config(24, 8192, 8192, 132)
    assert (c.blk_m, c.blk_n, c.stages, c.consumers, c.splits, c.tma_store) == (64, 32, 8, 1, 1, False)
    assert pick_swap_config(17, 4096, 14336, 132).splits == 2 and pick_swap_config(17, 4096, 4096, 132).splits == 1
    assert pick_swap_config(32, 4224, 8192, 132).splits == 2 and pick_swap_config(32, 4288, 8192, 132).splits == 1
    assert pick_swap_config(9, 4096, 4096, 132).blk_n == 16 and pick_swap_config(33, 4096, 4096, 132).blk_n == 64
    assert pick_swap_config(3, 4096, 14336, 132).blk_n == 8 and pick_swap_config(33, 4096, 14336, 132).splits == 1
    c.validate()
    assert c.smem_bytes() * 2 <= 227 * 1024                               # two CTAs per SM
    w = pick_swap_config(24, 133 * 64, 4096, 132)                          # wide: 128-row tiles
    assert (w.blk_m, w.blk_n, w.stages, w.consumers, w.splits, w.tma_store) == (128, 32, 6, 2, 1, False)
    w.validate()


def _compile(cfg: Sm90Config, M: int, N: int, K: int, a_major: str, d_dtype: Any, ep: EpilogueSpec,
             d_major: str = "M", elem: str = "bfloat16") -> tuple[Any, str]:
    """The kernel of the swapped problem (A = B^T (N, K), B = x (M, K) as (N', K) = (M, K)) compiled for sm_90a, and
    its source. d_major "M": D' (N, M) column-major (D (M, N) row-major), "N": row-major D'."""
    A = torch.empty(1, N, K, dtype=getattr(torch, elem))
    if a_major == "M":
        A = A.transpose(1, 2).contiguous().transpose(1, 2)
    Bt = torch.empty(1, M, K, dtype=getattr(torch, elem))
    D = torch.empty(1, M, N, dtype=d_dtype).transpose(1, 2) if d_major == "M" else torch.empty(1, N, M, dtype=d_dtype)
    C = torch.empty(1, M, N, dtype=d_dtype).transpose(1, 2) if ep.read_c else None
    bias = torch.empty(N if ep.bias == "m" else M, dtype=torch.bfloat16) if ep.bias != "none" else None
    tmA, tmB = sm90.make_maps(A, Bt, cfg, elem)
    full = N % cfg.blk_m == 0 and M % cfg.blk_n == 0
    W = flags = None
    if cfg.splits > 1:                                                    # split-K summed in the kernel
        W, flags = sm90.split_workspace(D, cfg, -(-N // cfg.blk_m)), torch.zeros(264, dtype=torch.int32)
    args = (tmA, tmB, C, D, bias, np.float32(1), np.float32(0), K, W, cfg, elem, sm90.operand_majors(A, Bt), ep,
            full, sm90.d_map(D, cfg) if cfg.splits == 1 else None) + ((flags,) if flags is not None else ())
    return sm90.sm90_gemm_kernel.compile(*args, arch="sm_90a"), sm90.sm90_gemm_kernel.source(*args)


@pytest.mark.parametrize("M, N, K", [(24, 8192, 8192), (32, 4096, 14336), (17, 1000, 4096), (4, 6144, 4096),
                                     (12, 4096, 14336), (48, 4096, 8192), (8, 28672, 4096), (32, 10240, 8192)])
@pytest.mark.parametrize("a_major", ["K", "M"])
@pytest.mark.parametrize("d_dtype, ep", [(torch.bfloat16, EpilogueSpec()), (torch.float16, FULL_EP),
                                         (torch.float32, FULL_EP)])
def test_swapped_tilings_compile_unserialized(M: int, N: int, K: int, a_major: str, d_dtype: Any,
                                              ep: EpilogueSpec) -> None:
    """The picks of the swapped problem (split-K summed in the kernel too) with D column-major: HGMMA not serialized,
    no spills; a 16-bit D leaves the accumulators by halves of packed registers."""
    if a_major == "M" and N % 64:
        pytest.skip("a ragged MN-major weight is another test's (column blocks)")
    cfg = pick_swap_config(M, N, K, 132)
    k, src = _compile(cfg, M, N, K, a_major, d_dtype, ep)
    assert "serialized" not in k.module.log, k.module.log
    assert k.resources.spill_store_bytes == 0 and k.resources.stack_frame_bytes == 0, k.resources
    if cfg.splits == 1:                                                   # (the splits' sum stores D from fp32 memory)
        assert ("tc::st_global_lo16(" in src) == (d_dtype != torch.float32)


@pytest.mark.parametrize("M, N, K", [(1, 8192, 8192), (16, 4096, 4096), (32, 10240, 8192)])
@pytest.mark.parametrize("promote", [True, False])
def test_swapped_fp8_tilings_compile_unserialized(M: int, N: int, K: int, promote: bool) -> None:
    """fp8 e4m3 picks of the swapped problem (128-element k-tiles, promoted or fast accumulation, wide too): QGMMA
    not serialized, no spills, with the whole epilogue into a column-major bf16 D."""
    cfg = pick_swap_config(M, N, K, 132, fp8=True, promote=promote)
    assert cfg.blk_k == 128 and cfg.promote == promote and cfg.splits == 1
    k, src = _compile(cfg, M, N, K, "K", torch.bfloat16, FULL_EP, elem="float8_e4m3fn")
    assert "serialized" not in k.module.log, k.module.log
    assert k.resources.spill_store_bytes == 0 and k.resources.stack_frame_bytes == 0, k.resources
    assert f"wgmma_m64n{cfg.blk_n}k32_f32_e4m3" in src


def test_pick_ragged_swap() -> None:
    """Ragged rows of x split into t tiles of bn = M / t rows (rounded up to 8) where the estimate says so; rows that
    128-row tiles divide keep the Hopper kernel's own pick, as do the shapes measured slower swapped."""
    c = pick_ragged_swap(520, 8192, 8192, 132)
    assert (c.blk_m, c.blk_n, c.stages, c.consumers, c.splits) == (128, 136, 5, 2, 1) and c.store_mn and c.tma_store
    assert pick_ragged_swap(800, 8192, 8192, 132).blk_n == 200 and pick_ragged_swap(520, 4096, 14336, 132).blk_n == 136
    assert pick_ragged_swap(520, 6144, 4096, 132) is None                 # (measured: 0.78 against 0.92 x cuBLAS)
    shapes = [(4096, 4096), (6144, 4096), (28672, 4096), (4096, 14336), (8192, 8192), (10240, 8192), (57344, 8192)]
    for M in (128, 256, 384, 1024, 2048, 4096, 8192):
        assert all(pick_ragged_swap(M, N, K, 132) is None for N, K in shapes), M
    picked = 0
    for M in range(49, 2300, 13):
        for N, K in shapes:
            c = pick_ragged_swap(M, N, K, 132)
            if c is None:
                continue
            picked += 1
            c.validate()
            t = -(-M // c.blk_n)
            assert 96 <= c.blk_n <= 208 and c.stages >= 4 and c.blk_n - 8 < -(-M // t) <= c.blk_n, (M, N, K, c)
            assert c.smem_bytes() <= 227 * 1024 < replace(c, stages=c.stages + 1).smem_bytes() or c.stages == 8
    assert picked > 100


@pytest.mark.parametrize("a_major", ["K", "M"])
@pytest.mark.parametrize("d_dtype, ep", [(torch.bfloat16, EpilogueSpec()), (torch.float16, FULL_EP)])
def test_store_mn_compiles_unserialized(a_major: str, d_dtype: Any, ep: EpilogueSpec) -> None:
    """The ragged pick's kernel (wgmma N = 136, whose wrappers the source defines; D^T through M-major buffers and one
    TMA store per consumer and tile): HGMMA not serialized, no spills, no stores of single values to global memory."""
    cfg = pick_ragged_swap(520, 8192, 8192, 132)
    k, src = _compile(cfg, 520, 8192, 8192, a_major, d_dtype, ep)
    assert "serialized" not in k.module.log, k.module.log
    assert k.resources.spill_store_bytes == 0 and k.resources.stack_frame_bytes == 0, k.resources
    assert "#define TC_WGMMA_N136" in src and "wgmma_m64n136k16_f32" in src
    assert "tc::tma_store_2d(" in src or "tc::tma_store_3d(" in src
    assert "tc::stmatrix_x4_trans(" in src and "tc::st_global_lo16(" not in src


def test_d_map_by_layout() -> None:
    """d_map: ``store_mn`` maps an M-contiguous 16-bit D (the swapped problem's D^T) in (64, BLK_N) boxes, and no
    other D; without it a row-major D is stored by TMA only in whole 128-byte chunks of the tile (a 96-column tile
    of 16-bit D would have lost its last 32 columns: it leaves the registers instead)."""
    mn = pick_ragged_swap(520, 8192, 8192, 132)
    Dt = torch.empty(520, 8192, dtype=torch.bfloat16).t().unsqueeze(0)   # D^T (1, 8192, 520), column-major
    m = sm90.d_map(Dt, mn)
    assert m is not None and m.args.box_dims[:2] == (64, 136) and m.args.global_dims[:2] == (8192, 520)
    assert sm90.d_map(torch.empty(520, 8192, dtype=torch.float32).t().unsqueeze(0), mn) is None
    assert sm90.d_map(torch.empty(1, 8192, 520, dtype=torch.bfloat16), mn) is None
    row = torch.empty(1, 512, 1024, dtype=torch.bfloat16)
    assert sm90.d_map(row, Sm90Config(128, 96, 64, 6)) is None and sm90.d_map(row, Sm90Config(128, 128, 64, 6))
    assert sm90.d_map(row.float(), Sm90Config(128, 96, 64, 6)) is not None   # fp32: 32-column chunks
    assert sm90.d_map(Dt, Sm90Config(128, 128, 64, 6)) is None             # column-major without store_mn
    with pytest.raises(ValueError, match="store_mn"):
        Sm90Config(256, 136, 64, 4, store_mn=True).validate()              # 128 rows per consumer
    with pytest.raises(ValueError, match="store_mn"):
        Sm90Config(128, 136, 64, 4, tma_store=False, store_mn=True).validate()


def test_stores_by_halves_only_where_values_leave_one_at_a_time() -> None:
    """Whole tiles of a row-major D keep their paired stores (the kernel's source as before); a ragged one takes
    the stores by halves, and its wgmmas are no longer serialized (ptxas C7514 before)."""
    cfg = Sm90Config(128, 128, 64, 6, tma_store=False)
    k, src = _compile(cfg, 1024, 1024, 1024, "K", torch.bfloat16, EpilogueSpec(), d_major="N")
    assert "tc::st_global_lo16(" not in src and "reinterpret_cast<unsigned*>(tCgD" in src
    k, src = _compile(cfg, 1001, 1000, 1000, "K", torch.bfloat16, EpilogueSpec(), d_major="N")
    assert "tc::st_global_lo16(" in src and "serialized" not in k.module.log, k.module.log


class _Cuda(torch.Tensor):
    """A CPU tensor that says it is on CUDA (tc.gemm's dispatch reads is_cuda only)."""

    @property
    def is_cuda(self) -> bool:
        return True


def test_tc_gemm_dispatch(monkeypatch: Any) -> None:
    """op._swapped_run: tc.gemm runs the swapped problem for 2-D 16-bit calls of SWAP_ROWS rows (by B's contiguous
    mode) on sm_90 that TMA reads swapped, with tc.gemm's epilogue; anything else keeps the other paths."""
    cc = {"cc": (9, 0)}
    monkeypatch.setattr(op, "_device_facts", lambda device: (132, cc["cc"]))
    monkeypatch.setattr(op, "_SWAPPED", {})
    monkeypatch.setattr(sm90, "Launch", lambda *args, **kw: None)               # no launch to resolve

    def ask(M: int, N: int = 256, K: int = 512, n_major: bool = False, dtype: Any = torch.bfloat16,
            a: Any = None, **kw: Any) -> bool:
        A = (a if a is not None else torch.randn(M, K).to(dtype)).as_subclass(_Cuda)
        B = _b(K, N, n_major, dtype).as_subclass(_Cuda)
        args = dict(C=None, alpha=1.0, beta=0.0, bias=None, bias_along="n", activation=None, out_dtype=None,
                    scale_a=1.0, scale_b=1.0, fast_accum=None)
        args.update(kw)
        op._SWAPPED.clear()
        return op._swapped_run(A, B, **args) is not None

    (k_low, k_high), (n_low, n_high) = SWAP_ROWS["K"], SWAP_ROWS["N"]
    assert ask(17) and ask(k_low) and ask(k_high) and ask(24, n_major=True) and ask(20, dtype=torch.float16)
    assert ask(n_low, n_major=True) and ask(n_high, n_major=True) and not ask(n_high + 1, n_major=True)
    assert not ask(k_low - 1) and not ask(n_low - 1, n_major=True) and not ask(k_high + 1)
    assert not ask(24, dtype=torch.float32)
    b = torch.randn(512, 512).to(torch.bfloat16)[:, ::2].as_subclass(_Cuda)   # neither N- nor K-contiguous
    assert op._swapped_run(torch.randn(24, 512).to(torch.bfloat16).as_subclass(_Cuda), b, None, 1.0, 0.0, None, "n",
                           None, None, 1.0, 1.0, None) is None
    assert ask(24, bias=torch.randn(256).to(torch.bfloat16)) and ask(24, bias=torch.randn(24), bias_along="m")
    assert ask(24, C=torch.randn(24, 256), beta=1.0) and ask(24, activation="silu", alpha=2.0)
    assert ask(24, out_dtype=torch.float32) and not ask(24, out_dtype=torch.float64)
    assert not ask(24, scale_a=2.0) and not ask(24, fast_accum=False) and not ask(24, activation="tanh")
    assert not ask(24, bias=torch.randn(24), bias_along="n") and not ask(24, C=torch.randn(24, 64), beta=1.0)
    assert not ask(24, K=500)                                             # rows off 16 bytes: TMA cannot read them
    assert not ask(24, a=torch.randn(512, 24).to(torch.bfloat16).t())     # x column-major: an MN-major tile of 32
    assert ask(24, N=1000) and not ask(24, N=1000, n_major=True, K=500)
    # ragged rows where the swapped tiles are estimated faster (pick_ragged_swap), 16-bit D only
    assert ask(520, N=4096, K=4096) and ask(520, N=4096, K=4096, n_major=True) and not ask(512, N=4096, K=4096)
    assert not ask(520, N=4096, K=4096, out_dtype=torch.float32) and not ask(600, N=2048, K=4096)
    assert not ask(520, N=0, K=4096) and not ask(520, N=4096, K=0)        # empty products: the other paths
    # B^T's 64-row tiles past the SMs: 128-row tiles, SWAP_WIDE_ROWS rows of x
    (wk_low, wk_high), (wn_low, wn_high) = SWAP_WIDE_ROWS["K"], SWAP_WIDE_ROWS["N"]
    wide = 133 * 64
    assert ask(24, N=132 * 64, K=64) and ask(24, N=132 * 64 + 8, K=64) and ask(wn_high, N=wide, n_major=True)
    assert not ask(wk_high + 1, N=wide, K=64) and ask(wk_high + 1, N=132 * 64, K=64) and ask(wk_low, N=wide, K=64)
    assert not ask(wk_low - 1, N=wide, K=64) and not ask(wn_low - 1, N=wide, n_major=True) and not ask(k_low - 1)
    # fp8: B K-contiguous and x row-major (fp8 wgmma reads K-major operands), fast_accum allowed, scales folded
    e4m3 = torch.float8_e4m3fn
    f8 = lambda M, **kw: ask(M, a=torch.randn(M, 512).to(e4m3), **kw)      # noqa: E731
    low8, high8 = SWAP_FP8_ROWS
    assert f8(low8, dtype=e4m3) and f8(high8, dtype=e4m3) and not f8(high8 + 1, dtype=e4m3)
    assert f8(16, dtype=e4m3, fast_accum=True) and f8(16, dtype=e4m3, out_dtype=torch.float16)
    assert not f8(16, dtype=e4m3, n_major=True) and not f8(16, dtype=e4m3, scale_a=2.0)
    assert not ask(16, a=torch.randn(512, 16).to(e4m3).t(), dtype=e4m3)    # x column-major
    cc["cc"] = (8, 0)
    assert not ask(24)


# ----------------------------------------------------------------------------- GPU

def _ref(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, along: str, act: Any) -> Any:
    ref = alpha * (A.double() @ B.double())
    if C is not None:
        ref = ref + beta * C.double()
    if bias is not None:
        ref = ref + (bias.double()[None, :] if along == "n" else bias.double()[:, None])
    return {"gelu": torch.nn.functional.gelu, "relu": torch.relu, "silu": torch.nn.functional.silu,
            None: lambda v: v}[act](ref)


def _tc_gemm_case(g: Any, i: int, M: int, N: int, K: int, n_major: bool, dtype: Any, out: Any,
                  alpha_beta: tuple[float, float]) -> None:
    """tc.gemm of random (M, K) x (K, N) operands (B N- or K-contiguous) with case i's epilogue (C where i % 3 == 0, a
    bias along n (odd i) or m where i % 4 < 2, activation i % 4 of none / gelu / relu / silu, alpha and beta), in
    `out` (None: dtype), against float64."""
    import tilecraft as tc

    alpha, beta = alpha_beta
    A = torch.randn(M, K, generator=g).to(dtype).cuda()
    B = _b(K, N, n_major, dtype, "cuda", seed=i)
    along = "n" if i % 2 else "m"
    C = torch.randn(M, N, generator=g).to(dtype).cuda() if i % 3 == 0 else None
    bias = torch.randn(N if along == "n" else M, generator=g).to(dtype).cuda() if i % 4 < 2 else None
    act = (None, "gelu", "relu", "silu")[i % 4]
    D = tc.gemm(A, B, C, alpha=alpha, beta=beta, bias=bias, bias_along=along, activation=act, out_dtype=out)
    ref = _ref(A, B, C if beta else None, alpha, beta, bias, along, act)
    assert D.dtype == (out or dtype) and tuple(D.shape) == (M, N) and D.is_contiguous()
    err = float((D.double() - ref).norm() / ref.norm())
    assert err < 4e-3, (M, N, K, i, err)


@gpu
@needs_cuda
@pytest.mark.parametrize("n_major", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_tc_gemm_swapped(n_major: bool, dtype: Any) -> None:
    """tc.gemm at SWAP_ROWS rows (the swapped problem on sm_90) against float64: random N (ragged too, and wide: 128-row
    tiles) and K, split-K, every epilogue, fp32 output."""
    g = torch.Generator().manual_seed(11 + n_major)
    op.clear_plans()
    low, high = SWAP_ROWS["N" if n_major else "K"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for i in range(10):
        M = int(torch.randint(low, high + 1, (1,), generator=g))
        blocks = int(torch.randint(1, 2 * sms + 1, (1,), generator=g))   # B's 64-column blocks
        M = min(M, SWAP_WIDE_ROWS["N"][1]) if blocks > sms else M         # (wide: 128-row tiles, fewer rows)
        N = 64 * blocks if n_major else 64 * blocks - 8 * int(torch.randint(0, 8, (1,), generator=g))
        K = 64 * int(torch.randint(1, 260, (1,), generator=g))
        _tc_gemm_case(g, i, M, N, K, n_major, dtype, torch.float32 if i == 5 else None,
                      (1.0, 0.0) if i % 5 else (0.5, 2.0))
    if torch.cuda.get_device_capability() == (9, 0):
        assert op._SWAPPED and all(run is not None for run in op._SWAPPED.values())


@gpu
@needs_cuda
@pytest.mark.parametrize("n_major", [False, True])
def test_gpu_tc_gemm_ragged_swap(n_major: bool) -> None:
    """tc.gemm at ragged rows that pick_ragged_swap takes (D^T through TMA from M-major buffers), every epilogue, both
    16-bit types, against float64; and the same tilings forced on ragged N and K (partial tiles of B^T and of x, a
    D TMA clips, and N = 1001, whose rows TMA cannot store: D leaves the registers)."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the Hopper kernel")
    g = torch.Generator().manual_seed(3 + n_major)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    op.clear_plans()
    for i, (M, N, K) in enumerate([(520, 4096, 4096), (300, 6144, 4096), (517, 4000, 4096), (777, 3000, 2048),
                                   (1100, 4096, 4096)]):
        assert pick_ragged_swap(M, N, K, sms) is not None or sms != 132, (M, N, K)
        _tc_gemm_case(g, i, M, N, K, n_major, (torch.bfloat16, torch.float16)[i % 2], None,
                      (1.0, 0.0) if i % 3 else (0.5, 2.0))
    for M, N, K, bn in [(517, 1000, 1000, 136), (131, 1001, 520, 136), (600, 512, 64, 200), (1500, 640, 4096, 104)]:
        cfg = Sm90Config(128, bn, 64, 4, store_mn=True)
        A = torch.randn(M, K, generator=g).to(torch.bfloat16).cuda()
        B = _b(K, N, n_major, torch.bfloat16, "cuda", seed=M)
        out = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
        try:
            op.GemmOp("bfloat16", None, cfg)(B.t(), A.t(), out=out.t())
        except ValueError:                                                # an MN-major B^T tile of a ragged N
            assert n_major and N % 8, (M, N, K)
            continue
        ref = A.double() @ B.double()
        err = float((out.double() - ref).norm() / ref.norm())
        assert err < 4e-3, (M, N, K, bn, err)


@gpu
@needs_cuda
def test_gpu_d_without_tma_by_halves() -> None:
    """The Hopper kernel's 16-bit D stored one value at a time: ragged row-major (N = 1001: rows off 16 bytes, no TMA
    store) and column-major, against float64."""
    import tilecraft as tc

    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the Hopper kernel")
    A = torch.randn(300, 520, device="cuda").to(torch.bfloat16)
    B = torch.randn(1001, 520, device="cuda").to(torch.bfloat16).t()       # K-major: TMA reads any N
    bias = torch.randn(1001, device="cuda").to(torch.bfloat16)
    cfg = Sm90Config(128, 128, 64, 4)
    D = tc.gemm(A, B, bias=bias, activation="relu", config=cfg)
    ref = torch.relu(A.double() @ B.double() + bias.double())
    assert float((D.double() - ref).norm() / ref.norm()) < 4e-3
    out = torch.empty(1001, 300, device="cuda", dtype=torch.bfloat16).t()   # column-major D
    op.GemmOp("bfloat16", None, cfg)(A, B[:, :1000], out=out[:, :1000])
    ref = A.double() @ B[:, :1000].double()
    assert float((out[:, :1000].double() - ref).norm() / ref.norm()) < 4e-3


@gpu
@needs_cuda
def test_gpu_tc_gemm_swapped_fp8() -> None:
    """fp8 e4m3 at SWAP_FP8_ROWS rows through tc.gemm (the swapped problem on sm_90): per-tensor scales, promoted and
    fast accumulation, a bias and an activation, against float64 of the fp8 values (torch._scaled_mm's tolerance)."""
    import tilecraft as tc

    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("fp8 on the Hopper kernel")
    g = torch.Generator().manual_seed(5)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    op.clear_plans()                                                      # (tc.gemm's calls are planned again)
    for i, (M, N, K) in enumerate([(1, 4096, 4096), (7, 1000, 2048), (16, 64 * sms + 64, 1024), (32, 2048, 8192)]):
        A = torch.randn(M, K, generator=g).cuda().to(torch.float8_e4m3fn)
        B = torch.randn(N, K, generator=g).cuda().to(torch.float8_e4m3fn).t()
        bias = torch.randn(N, generator=g).cuda().to(torch.bfloat16) if i % 2 else None
        D = tc.gemm(A, B, scale_a=0.5, scale_b=2.0, bias=bias, activation="relu" if i % 2 else None,
                    fast_accum=True if i == 3 else None)
        ref = 0.5 * 2.0 * (A.double() @ B.double()) + (bias.double() if bias is not None else 0.0)
        ref = torch.relu(ref) if i % 2 else ref
        assert D.dtype == torch.bfloat16 and tuple(D.shape) == (M, N)
        err = float((D.double() - ref).norm() / ref.norm())
        assert err < (1e-2 if i == 3 else 4e-3), (M, N, K, err)
    assert op._SWAPPED and all(run is not None for run in op._SWAPPED.values())
