"""The fp32 GEMV (tilecraft.gemm.gemv): its picks, every row count and B major compiled for sm_80 and sm_90a without
spills and with 128-bit loads of B, results on the CPU (the generated C++ run by the host compiler, emulate.py) for
both B majors, both load widths, split-K partial sums and the epilogue, and on a GPU against float64."""
from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
import torch
from fp32_gemm_check import check_fp32_gemm

import emulate
from tilecraft import dsl
from tilecraft.dsl import TraceError
from tilecraft.gemm.gemv import _as_nk
from tilecraft.gemm.gemv import (A_SLICE_BYTES, MAX_ROWS, MIN_SPLIT_K, SgemvConfig, b_vectorizable, pick_sgemv,
                                  sgemv, sgemv_kernel)


def operands(M: int, N: int, K: int, n_major: bool, fill=torch.randn):
    """A (M,K) and B (K,N): B row-major (N-contiguous) or the transpose of an (N,K) row-major weight."""
    A = fill(M, K)
    B = fill(K, N) if n_major else fill(N, K).t()
    return A, B


def config_for(M: int, N: int, K: int, n_major: bool, splits: int, **fields) -> SgemvConfig:
    """The pick's tiling for these operands with `splits` splits (k_slice to fit them) and other `fields`. The
    kernel needs vec 1 where B is not ``b_vectorizable`` (sgemv makes sure of it; a test calling the kernel must)."""
    vec = fields.pop("vec", 4)
    cfg, _ = pick_sgemv(M, N, K, n_major, vec, 132)
    g = cfg.k_granule(n_major)
    per = -(-(-(-K // g)) // splits) * g
    cfg = dataclasses.replace(cfg, **fields)
    return dataclasses.replace(cfg, k_slice=max(cfg.min_k_slice(n_major), 1 << max(0, per - 1).bit_length()))


# ----------------------------------------------------------------------------- picks

@pytest.mark.parametrize("n_major", [True, False], ids=["Bn", "Bk"])
@pytest.mark.parametrize("vec", [4, 1])
def test_pick_fits_every_split_and_fills_the_sms(n_major, vec):
    """rows the next power of two of M; no split empty, each within k_slice; about CTAS_PER_SM CTAs per SM where K is
    long enough; splits at least MIN_SPLIT_K of K long unless A's slice forces more; shared memory within 48 KB."""
    for M in range(1, MAX_ROWS + 1):
        for N, K in ((4096, 4096), (4096, 11008), (11008, 4096), (1000, 1000), (128, 65536), (7, 5), (1, 1), (5000, 0)):
            cfg, splits = pick_sgemv(M, N, K, n_major, vec, 132)
            cfg.validate(n_major)
            assert cfg.rows >= M and cfg.rows < 2 * M and cfg.vec == vec
            g = cfg.k_granule(n_major)
            units = -(-K // g)
            per = -(-units // splits) * g
            assert splits == 1 or (splits - 1) * per < K, (M, N, K, splits, per)       # the last split not empty
            assert per <= cfg.k_slice and cfg.rows * cfg.k_slice * 4 <= A_SLICE_BYTES
            assert cfg.smem_bytes(n_major) <= 48 * 1024
            blocks = -(-N // cfg.columns(n_major))
            if splits > 1 and cfg.rows * per * 4 < A_SLICE_BYTES // 2:
                assert per >= MIN_SPLIT_K[n_major] - g or blocks * splits <= 8 * 132 * 1.5
    # the memory-bound shapes the pick was made for
    cfg, splits = pick_sgemv(1, 4096, 4096, True, 4, 132)
    assert (cfg.rows, splits, cfg.k_slice) == (1, 8, 512)          # 32 column blocks x 8 splits: 2 CTAs per SM
    cfg, splits = pick_sgemv(16, 4096, 4096, False, 4, 132)
    assert (cfg.rows, splits) == (16, 8)                           # A's slice (16 x 512 floats) sets the splits
    assert (cfg.min_blocks, cfg.unroll) == (2, 1)                  # two CTAs per SM from 8 rows (K-contiguous B)
    assert pick_sgemv(8, 4096, 4096, True, 4, 132)[0].min_blocks == 1
    assert pick_sgemv(8, 4096, 4096, False, 4, 132)[0].warps == 16
    assert pick_sgemv(16, 4096, 4096, True, 4, 132)[0].min_blocks == 2


def test_config_validation():
    SgemvConfig(rows=16, k_slice=512).validate()
    SgemvConfig(rows=4, k_slice=512, vec=8).validate(elem_bytes=2)          # 16 bytes of a 16-bit B
    with pytest.raises(ValueError, match="16 bytes"):
        SgemvConfig(rows=4, k_slice=512, vec=8).validate()                  # 32 bytes of fp32
    SgemvConfig(rows=16, k_slice=1024, warps=32).validate(n_major=False)  # the warps' reduction is N-contiguous B's
    with pytest.raises(ValueError, match="N-contiguous"):
        SgemvConfig(rows=16, k_slice=1024, warps=32).validate(n_major=True)
    for bad in (dict(rows=3, k_slice=64), dict(rows=4, k_slice=48), dict(rows=4, k_slice=64, vec=3),
                dict(rows=16, k_slice=2048), dict(rows=4, k_slice=64, warps=0), dict(rows=4, k_slice=64, cols=9)):
        with pytest.raises(ValueError):
            SgemvConfig(**bad).validate()


def test_b_vectorizable():
    B = torch.zeros(64, 32)
    assert b_vectorizable(B) and b_vectorizable(B.t())
    H = torch.zeros(64, 32, dtype=torch.bfloat16)                          # 8 16-bit elements a load
    assert b_vectorizable(H) and not b_vectorizable(H[:, 4:28]) and b_vectorizable(H[:, 4:28], 4)
    assert not b_vectorizable(torch.zeros(64, 36, dtype=torch.float16)) and b_vectorizable(torch.zeros(64, 36), 4)
    assert not b_vectorizable(torch.zeros(64, 30))                 # the contiguous extent
    assert not b_vectorizable(torch.zeros(64, 34)[:, :32])         # the other stride
    assert not b_vectorizable(torch.zeros(64 * 32 + 1)[1:].view(64, 32))  # a pointer off 16 bytes
    assert not b_vectorizable(torch.zeros(64, 64)[:, ::2])         # no unit stride


def test_sgemv_checks_its_inputs():
    A, B = torch.zeros(2, 8), torch.zeros(8, 4)
    with pytest.raises(ValueError, match="CUDA"):
        sgemv(A, B)
    with pytest.raises(TypeError, match="float32"):
        sgemv(A.double(), B)


# ----------------------------------------------------------------------------- compiled

ROW_COUNTS = [1, 2, 4, 8, 16]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("n_major", [True, False], ids=["Bn", "Bk"])
@pytest.mark.parametrize("vec", [4, 1])
def test_picks_compile_without_spills(arch, n_major, vec):
    """The pick's tiling at every row count, with and without split-K: no spills, no stack; vec 4 loads B 128 bits
    at a time (and vec 1 cannot)."""
    for rows in ROW_COUNTS:
        N, K = (4096, 4096) if vec == 4 else (4095, 4095)
        A, B = operands(rows, N, K, n_major, torch.zeros)
        assert b_vectorizable(B.t()) == (vec == 4)
        cfg, splits = pick_sgemv(rows, N, K, n_major, vec, 132)
        assert splits > 1
        for s in (1, splits):
            P, cnt = (torch.zeros(s, rows, N), torch.zeros(8, dtype=torch.int32)) if s > 1 else (None, None)
            args = (A, B.t(), torch.zeros(rows, N), np.float32(1), np.float32(0), P, cnt, cfg, s)
            res = sgemv_kernel.compile(*args, arch=arch).resources
            assert (res.spill_store_bytes, res.spill_load_bytes, res.stack_frame_bytes) == (0, 0, 0), (rows, s, res)
            assert res.registers <= 255
            src = sgemv_kernel.source(*args)
            loads = [ln for ln in src.splitlines() if "reinterpret_cast<const uint4*>(B +" in ln]
            assert bool(loads) == (vec == 4), (rows, s)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("n_major", [True, False], ids=["Bn", "Bk"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_16_bit_picks_compile_without_spills(arch, n_major, dtype):
    """16-bit operands: the pick's tiling at every row count with split-K, no spills; B read 128 bits (8 elements)
    at a time, 64 bits where an N-contiguous B's lanes take fewer columns (16 rows: 4 columns of 16 sums each)."""
    N, K = 4096, 4096
    for rows in ROW_COUNTS:
        A, B = operands(rows, N, K, n_major, torch.zeros)
        A, B = A.to(dtype), B.to(dtype)
        assert b_vectorizable(B.t())
        cfg, splits = pick_sgemv(rows, N, K, n_major, 8, 132)
        cfg.validate(n_major, 2)
        assert cfg.vec == (8 if not n_major or rows <= 8 else 4) and splits > 1
        P, cnt = torch.zeros(splits, rows, N), torch.zeros(64, dtype=torch.int32)
        args = (A, B.t(), torch.zeros(rows, N, dtype=dtype), np.float32(1), np.float32(0), P, cnt, cfg, splits)
        res = sgemv_kernel.compile(*args, arch=arch).resources
        assert (res.spill_store_bytes, res.spill_load_bytes, res.stack_frame_bytes) == (0, 0, 0), (rows, res)
        src = sgemv_kernel.source(*args)
        vector = "uint4" if cfg.vec == 8 else "uint2"
        assert any(f"reinterpret_cast<const {vector}*>(B +" in ln for ln in src.splitlines()), rows


def test_source_structure():
    """N-contiguous B: the warps' sums meet through shared memory; K-contiguous B: a reduce-scatter of V - 1 shuffles
    for V sums per lane (one more mask where V < 32), or (scatter off) a butterfly of five per output; with splits,
    one count per CTA and the partials read at L2 by the last."""
    A, B = operands(4, 4096, 4096, True, torch.zeros)
    cfg = config_for(4, 4096, 4096, True, 8)
    split = (torch.zeros(8, 4, 4096), torch.zeros(32, dtype=torch.int32))
    src = sgemv_kernel.source(A, B.t(), torch.zeros(4, 4096), np.float32(1), np.float32(0), *split, cfg, 8)
    assert not cfg.a_smem and "__shfl_xor_sync" not in src and "sA[" not in src    # 4 rows: A from global memory
    assert src.count("__syncthreads()") == 1                                          # the warps' sums only
    staged = sgemv_kernel.source(A, B.t(), torch.zeros(4, 4096), np.float32(1), np.float32(0), *split,
                                 dataclasses.replace(cfg, a_smem=True), 8)
    assert "sA[" in staged and staged.count("__syncthreads()") == 2
    A, B = operands(4, 4096, 4096, False, torch.zeros)
    cfg = config_for(4, 4096, 4096, False, 2)
    split = (torch.zeros(2, 4, 4096), torch.zeros(128, dtype=torch.int32))
    src = sgemv_kernel.source(A, B.t(), torch.zeros(4, 4096), np.float32(1), np.float32(0), *split, cfg, 2)
    assert cfg.rows * cfg.cols == 16 and src.count("__shfl_xor_sync") == 8 + 4 + 2 + 1 + 1   # reduce-scatter
    butterfly = sgemv_kernel.source(A, B.t(), torch.zeros(4, 4096), np.float32(1), np.float32(0), *split,
                                    dataclasses.replace(cfg, scatter=False), 2)
    assert butterfly.count("__shfl_xor_sync") == 5 * cfg.rows * cfg.cols
    assert src.count("__syncthreads()") == 1                        # A's slice only
    assert src.count("tc::cta_arrive_last(") == 1 and src.count("tc::ld_cg(") == 2     # the last split sums


def test_shfl_xor_traces_and_refuses_bad_masks():
    @dsl.kernel
    def butterfly(X):
        v = X(dsl.threadIdx.x)
        for m in (16, 8, 4, 2, 1):
            v = v + dsl.shfl_xor(v, m)
        X[dsl.threadIdx.x] = v

    src = butterfly.source(torch.zeros(32))
    assert "__shfl_xor_sync(0xffffffffu," in src and src.count("__shfl_xor_sync") == 5

    for mask in (0, 32, 1.5, True):
        @dsl.kernel
        def bad(X, mask: dsl.Constexpr):
            X[0] = dsl.shfl_xor(X(0), mask)

        with pytest.raises(TraceError, match="lane mask"):
            bad.source(torch.zeros(4), mask)


# ----------------------------------------------------------------------------- emulated on the CPU

needs_gxx = pytest.mark.skipif(not emulate.available(), reason="no host C++ compiler")


def emulated(A, B, C, alpha, beta, cfg, splits, P=None, bias=None, bias_along="none", act="none"):
    """sgemv_kernel in the emulator; with splits, P (the partials) is made when not given, and the counters are
    checked to be back at 0."""
    Bt = _as_nk(B)
    n_major = Bt.stride(0) == 1
    grid = (-(-B.shape[1] // cfg.columns(n_major)), splits)
    counters = None
    if splits > 1:
        P = torch.full((splits, *C.shape), float("nan")) if P is None else P
        counters = torch.zeros(grid[0] + 3, dtype=torch.int32)
    emulate.launch(sgemv_kernel, grid, (cfg.threads,), A, Bt, C, np.float32(alpha), np.float32(beta), P, counters,
                   cfg, splits, bias, bias_along, act)
    assert counters is None or not counters.any()


@needs_gxx
@pytest.mark.parametrize("n_major", [True, False], ids=["Bn", "Bk"])
@pytest.mark.parametrize("M,N,K,vec", [(3, 36, 204, 4), (5, 37, 203, 1), (16, 40, 332, 4), (1, 7, 5, 1), (9, 64, 64, 4),
                                       (2, 8, 12, 4)])
def test_emulated_epilogue(n_major, M, N, K, vec):
    """One split: C = alpha A B + beta C within fp32's bound, ragged M, N and K, both load widths, a C view."""
    torch.manual_seed(M * N + K)
    A, B = operands(M, N, K, n_major)
    assert b_vectorizable(B.t()) == (vec == 4)
    cfg = config_for(M, N, K, n_major, 1, vec=vec)
    C0 = torch.randn(M, 2 * N)[:, ::2]                              # a strided view
    C = C0.clone()
    emulated(A, B, C, 0.5, -1.5, cfg, 1)
    check_fp32_gemm(A, B, C0, C, 0.5, -1.5)
    C = torch.full((M, N), float("nan"))                            # beta 0 does not read C
    emulated(A, B, C, 2.0, 0.0, cfg, 1)
    check_fp32_gemm(A, B, torch.zeros(M, N), C, 2.0, 0.0)


@needs_gxx
@pytest.mark.parametrize("dtype,along,act,splits", [(torch.float32, "n", "gelu", 1), (torch.float32, "m", "relu", 3),
                                                    (torch.bfloat16, "n", "silu", 2), (torch.float16, "m", "gelu", 1)])
def test_emulated_bias_and_activation(dtype, along, act, splits):
    """C = act(alpha A B + beta C + bias) with a bias per column or per row (float32 beside 16-bit operands too), in
    fp32 before C is rounded, through the last split's sum too; both B majors."""
    import torch.nn.functional as F

    for n_major in (True, False):
        M, N, K = 5, 40, 300
        torch.manual_seed(M + splits)
        A, B = (x.to(dtype) for x in operands(M, N, K, n_major))
        bias = torch.randn(N if along == "n" else M).to(torch.float32 if along == "m" else dtype)
        cfg = config_for(M, N, K, n_major, splits, vec=16 // A.element_size() if n_major else 1)
        C0 = torch.randn(M, N).to(dtype)
        C = C0.clone()
        emulated(A, B, C, 0.5, 2.0, cfg, splits, bias=bias, bias_along=along, act=act)
        ref = 0.5 * (A.double() @ B.double()) + 2.0 * C0.double() + (bias.double() if along == "n"
                                                                    else bias.double()[:, None])
        ref = {"relu": torch.relu, "gelu": F.gelu, "silu": F.silu}[act](ref)
        tol = 1e-5 if dtype == torch.float32 else 4e-3
        assert float((C.double() - ref).norm() / ref.norm()) < tol, (n_major, along, act)


@needs_gxx
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("n_major,M,N,K,splits,vec", [(True, 3, 64, 256, 1, 8), (False, 5, 72, 520, 2, 8),
                                                      (True, 16, 40, 200, 3, 4), (False, 2, 37, 203, 1, 1),
                                                      (True, 1, 304, 1000, 4, 8), (True, 9, 33, 777, 2, 1)])
def test_emulated_16_bit(dtype, n_major, M, N, K, splits, vec):
    """float16 / bfloat16 A, B and C: B read vec elements at a time (8: 128 bits), products summed in fp32 (A's
    slice in shared memory as fp32, the split partials fp32), C = alpha A B + beta C rounded once; A from global
    memory at up to 4 rows of an N-contiguous B."""
    torch.manual_seed(M + N + K)
    A, B = operands(M, N, K, n_major)
    A, B = A.to(dtype), B.to(dtype)
    assert b_vectorizable(B.t(), vec)
    cfg = config_for(M, N, K, n_major, splits, vec=vec)
    C0 = torch.randn(M, N).to(dtype)
    C = C0.clone()
    emulated(A, B, C, 0.5, -1.5, cfg, splits)
    ref = 0.5 * (A.double() @ B.double()) - 1.5 * C0.double()
    assert float((C.double() - ref).norm() / ref.norm()) < (4e-3 if dtype == torch.bfloat16 else 5e-4)


@needs_gxx
@pytest.mark.parametrize("M,N,K,splits", [(1, 36, 203, 1), (3, 40, 204, 3), (16, 37, 99, 2)])
def test_emulated_a_from_global_memory(M, N, K, splits):
    """An N-contiguous B with A read from global memory in each step (a_smem off): ragged K (the predicated tail),
    rows past M (clamped reads, not stored), vector and scalar loads of B, splits."""
    torch.manual_seed(K)
    A, B = operands(M, N, K, True)
    cfg = config_for(M, N, K, True, splits, a_smem=False, vec=4 if b_vectorizable(B.t()) else 1)
    assert cfg.smem_bytes(True) == 4 * cfg.warps * min(cfg.rows, cfg.rows_group) * cfg.columns(True)
    C0 = torch.randn(M, N)
    C = C0.clone()
    emulated(A, B, C, 1.5, 0.5, cfg, splits)
    check_fp32_gemm(A, B, C0, C, 1.5, 0.5)


@needs_gxx
@pytest.mark.parametrize("fields", [dict(scatter=False), dict(cols=3), dict(cols=8, warps=2), dict(cols=1, rows=1)],
                         ids=["butterfly", "cols3", "cols8", "cols1"])
def test_emulated_k_contiguous_reductions(fields):
    """A K-contiguous B's lane sums: the butterfly (scatter off, or cols no power of two) and the reduce-scatter at
    other column counts (V = rows x cols values per lane: 1 .. 64)."""
    M = 1 if fields.get("rows") == 1 else 3
    N, K = 37, 204
    torch.manual_seed(len(fields))
    A, B = operands(M, N, K, False)
    cfg = config_for(M, N, K, False, 1, **fields)
    C = torch.zeros(M, N)
    emulated(A, B, C, 1.0, 0.0, cfg, 1)
    check_fp32_gemm(A, B, torch.zeros(M, N), C, 1.0, 0.0)


@needs_gxx
@pytest.mark.parametrize("n_major", [True, False], ids=["Bn", "Bk"])
@pytest.mark.parametrize("M,N,K,splits,vec", [(3, 36, 204, 3, 4), (16, 41, 333, 2, 1), (2, 129, 999, 5, 1)])
def test_emulated_split_partials(n_major, M, N, K, splits, vec):
    """Each split sums exactly its k-range (ceil(K / splits) rounded to the step's granule) into its slice of the
    workspace, and the last split of each column block writes C = alpha * (their sum) + beta * C; a column-major A,
    the counters left at 0."""
    torch.manual_seed(splits)
    A, B = operands(M, N, K, n_major)
    A = A.t().contiguous().t()
    assert b_vectorizable(B.t()) == (vec == 4)
    cfg = config_for(M, N, K, n_major, splits, vec=vec)
    P = torch.full((splits, M, N), float("nan"))
    C0 = torch.randn(M, N)
    C = C0.clone()
    emulated(A, B, C, -0.5, 2.0, cfg, splits, P)
    g = cfg.k_granule(n_major)
    per = -(-(-(-K // g)) // splits) * g
    for i in range(splits):
        k = slice(i * per, (i + 1) * per)
        check_fp32_gemm(A[:, k], B[k], torch.zeros(M, N), P[i], 1.0, 0.0)
    check_fp32_gemm(A, B, C0, C, -0.5, 2.0)


@needs_gxx
def test_emulated_single_column():
    """N = 1: a column contiguous along K (B (K,1) row-major, whose unit stride along N means nothing) runs as
    K-contiguous, with splits, as does the transposed weight."""
    torch.manual_seed(1)
    A = torch.randn(3, 1000)
    for B in (torch.randn(1000, 1), torch.randn(1, 1000).t()):
        assert _as_nk(B).stride() == (1000, 1)
        cfg = config_for(3, 1, 1000, False, 2)
        C = torch.zeros(3, 1)
        emulated(A, B, C, 1.0, 0.0, cfg, 2)
        check_fp32_gemm(A, B, torch.zeros(3, 1), C, 1.0, 0.0)


@needs_gxx
@pytest.mark.parametrize("n_major", [True, False], ids=["Bn", "Bk"])
def test_emulated_inf_in_b_reaches_only_its_column(n_major):
    """An inf in B's last row (the predicated tail step) makes inf or NaN exactly where float64 does."""
    M, N, K = 2, 36, 203
    A, B = operands(M, N, K, n_major)
    B[K - 1, 5] = float("inf")
    cfg = config_for(M, N, K, n_major, 1, vec=4 if b_vectorizable(B.t()) else 1)   # 4 (Bn), 1 (Bk)
    C = torch.zeros(M, N)
    emulated(A, B, C, 1.0, 0.0, cfg, 1)
    ref = (A.double() @ B.double()).float()
    assert torch.equal(C.isfinite(), ref.isfinite()) and not C[:, 5].isfinite().any()
    keep = ref.isfinite()
    assert torch.allclose(C[keep], ref[keep], rtol=1e-4, atol=1e-3)


# ----------------------------------------------------------------------------- GPU

def gpu_operands(M, N, K, n_major, a_major="k"):
    A = torch.randn(M, K, device="cuda") if a_major == "k" else torch.randn(K, M, device="cuda").t()
    B = torch.randn(K, N, device="cuda") if n_major else torch.randn(N, K, device="cuda").t()
    return A, B


@pytest.mark.gpu
def test_gpu_random_shapes():
    """The picks at random M 1..16, odd N and K (every split count the pick makes), both B majors, both A majors,
    alpha and beta, against float64."""
    rng = random.Random(9)
    for i in range(40):
        M, N, K = rng.randint(1, MAX_ROWS), rng.choice([rng.randint(1, 3000), 4 * rng.randint(1, 1500)]), \
            rng.choice([rng.randint(1, 5000), 4 * rng.randint(1, 2000)])
        n_major, a_major = rng.random() < 0.5, rng.choice("km")
        A, B = gpu_operands(M, N, K, n_major, a_major)
        C0 = torch.randn(M, N, device="cuda")
        alpha, beta = rng.choice([(1.0, 0.0), (0.5, 2.0), (-1.0, 1.0)])
        C = sgemv(A, B, C0.clone(), alpha, beta)
        check_fp32_gemm(A.cpu(), B.cpu(), C0.cpu(), C.cpu(), alpha, beta)


@pytest.mark.gpu
@pytest.mark.parametrize("n_major", [True, False], ids=["Bn", "Bk"])
def test_gpu_explicit_splits_widths_and_views(n_major):
    """Explicit split counts, a B whose loads cannot be 128-bit (vec lowered to 1), a C view, beta 0 over NaN."""
    M, N, K = 7, 1024, 3000
    A, B = gpu_operands(M, N, K, n_major)
    for splits in (3, 4, 11):                                     # 3 or more: A's 8 x (K / splits) slice fits
        cfg = config_for(M, N, K, n_major, splits)
        C = torch.full((M, N), float("nan"), device="cuda")
        sgemv(A, B, C, config=cfg, splits=splits)
        check_fp32_gemm(A.cpu(), B.cpu(), torch.zeros(M, N), C.cpu(), 1.0, 0.0)
    Bo = (torch.randn(K * N + 1, device="cuda")[1:].view(K, N) if n_major
          else torch.randn(N * K + 1, device="cuda")[1:].view(N, K).t())
    assert not b_vectorizable(Bo.t())
    C0 = torch.randn(M, 2 * N, device="cuda")[:, ::2]
    for cfg, splits in ((None, None), (config_for(M, N, K, n_major, 3), 3)):   # an explicit vec 4 is lowered
        C = sgemv(A, Bo, C0.clone(), 1.0, 0.5, config=cfg, splits=splits)
        check_fp32_gemm(A.cpu(), Bo.cpu(), C0.cpu(), C.cpu(), 1.0, 0.5)


@pytest.mark.gpu
def test_gpu_edges_and_refusals():
    A, B = gpu_operands(3, 5, 0, True)
    C0 = torch.randn(3, 5, device="cuda")
    assert torch.allclose(sgemv(A, B, C0.clone(), 1.0, 0.5), 0.5 * C0)            # K = 0: beta * C
    for n_major in (False, True):                                                   # N = 1, either layout
        A, B = gpu_operands(2, 1, 4444, n_major)
        check_fp32_gemm(A.cpu(), B.cpu(), torch.zeros(2, 1), sgemv(A, B).cpu(), 1.0, 0.0)
    assert sgemv(*gpu_operands(0, 8, 8, True)).shape == (0, 8)
    with pytest.raises(ValueError, match="at most 16"):
        sgemv(*gpu_operands(17, 8, 8, True))
    with pytest.raises(ValueError, match="splits"):
        sgemv(*gpu_operands(2, 8, 8, True), splits=0)
    with pytest.raises(ValueError, match="rows"):
        sgemv(*gpu_operands(5, 8, 8, True), config=SgemvConfig(rows=4, k_slice=64))
    with pytest.raises(ValueError, match="k_slice"):
        sgemv(*gpu_operands(2, 8, 1000, True), config=SgemvConfig(rows=2, k_slice=64), splits=2)
    A, B = torch.randn(16, 1 << 16, device="cuda"), torch.randn(1, 1 << 16, device="cuda").expand(1 << 16, -1)
    with pytest.raises(ValueError, match="32-bit offsets"):                  # 16 x 65536 x 4096 partials
        sgemv(A, B, config=SgemvConfig(rows=16, k_slice=16), splits=4096)


@pytest.mark.gpu
def test_gpu_tc_gemm_takes_the_gemv_for_few_rows(monkeypatch):
    """tc.gemm in IEEE fp32 (TF32 off) runs the GEMV for M <= 16 (with a bias and activation too) and the SGEMM
    above (torch with them), against float64."""
    import tilecraft as tc
    from tilecraft.gemm import gemv as gemv_module

    from tilecraft.dsl.kernel import BoundLaunch, Kernel

    calls = []
    launch, bound = Kernel.launch, BoundLaunch.__call__                   # sgemm_tuned launches, sgemv binds
    monkeypatch.setattr(Kernel, "launch", lambda self, *a, **k: (calls.append(self.__name__), launch(self, *a, **k))[1])
    monkeypatch.setattr(BoundLaunch, "__call__",
                        lambda self, *a, **k: (calls.append(self.owner.__name__), bound(self, *a, **k))[1])
    torch.backends.cuda.matmul.allow_tf32 = False
    for M in (1, 16, 17):
        A, B = gpu_operands(M, 4096, 4096, False)
        D = tc.gemm(A, B)
        check_fp32_gemm(A.cpu(), B.cpu(), torch.zeros(M, 4096), D.cpu(), 1.0, 0.0)
        assert ("sgemv_kernel" in calls) == (M <= MAX_ROWS), (M, calls)
        calls.clear()
        bias = torch.randn(4096, device="cuda")                           # the GEMV's epilogue; the SGEMM has none
        D = tc.gemm(A, B, bias=bias, activation="silu")
        ref = torch.nn.functional.silu(A.double() @ B.double() + bias.double())
        assert float((D.double() - ref).norm() / ref.norm()) < 1e-5
        assert ("sgemv_kernel" in calls) == (M <= MAX_ROWS) and "sgemm_tuned_kernel" not in calls, (M, calls)
        calls.clear()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_gpu_16_bit_random_shapes(dtype):
    """16-bit operands at random M 1..16, odd and 8-multiple N and K, both B majors, alpha and beta, the picks'
    splits, against float64 (the output's rounding bounds the error); and tc.gemm's dispatch at 2 rows: the GEMV for
    an N-contiguous B, the skinny GEMM (the mixed-input kernel) for a K-contiguous one, with a bias along N or M and
    an activation too, the tensor cores for an output of another dtype."""
    import tilecraft as tc
    from tilecraft.dsl.kernel import BoundLaunch

    rng = random.Random(16)
    tol = 4e-3 if dtype == torch.bfloat16 else 5e-4
    for i in range(16):
        M, N, K = rng.randint(1, 16), rng.choice([rng.randint(1, 3000), 8 * rng.randint(1, 800)]), \
            rng.choice([rng.randint(1, 5000), 8 * rng.randint(1, 1000)])
        n_major = i % 2 == 0
        A, B = (x.to(dtype) for x in gpu_operands(M, N, K, n_major))
        C0 = torch.randn(M, N, device="cuda").to(dtype)
        alpha, beta = rng.choice([(1.0, 0.0), (0.5, 2.0), (-1.0, 1.0)])
        C = sgemv(A, B, C0.clone(), alpha, beta)
        ref = alpha * (A.double() @ B.double()) + beta * C0.double()
        assert float((C.double() - ref).norm() / ref.norm()) < tol, (M, N, K, n_major)
    A, B = gpu_operands(2, 64, 64, True)
    with pytest.raises(TypeError, match=str(dtype).replace("torch.", "")):
        sgemv(A.to(dtype), B)                                         # B's dtype differs from A's
    calls = []
    bound = BoundLaunch.__call__
    try:
        BoundLaunch.__call__ = lambda self, *a, **k: (calls.append(self.owner.__name__), bound(self, *a, **k))[1]
        for n_major in (True, False):
            A, B = (x.to(dtype) for x in gpu_operands(2, 4096, 4096, n_major))
            bn, bm = torch.randn(4096, device="cuda").to(dtype), torch.randn(2, device="cuda")
            kernel = "sgemv_kernel" if n_major else "mixed_gemm_kernel"
            for kwargs, ours in ((dict(), True), (dict(alpha=2.0), True), (dict(bias=bn, activation="gelu"), True),
                                 (dict(bias=bm, bias_along="m", activation="relu"), True),
                                 (dict(out_dtype=torch.float32), False)):
                D = tc.gemm(A, B, **kwargs)
                ref = kwargs.get("alpha", 1.0) * (A.double() @ B.double())
                ref = ref + (bn.double() if "bias" in kwargs and "bias_along" not in kwargs else 0.0)
                ref = ref + (bm.double()[:, None] if "bias_along" in kwargs else 0.0)
                ref = {"gelu": torch.nn.functional.gelu, "relu": torch.relu}.get(kwargs.get("activation"),
                                                                                 lambda v: v)(ref)
                assert D.dtype == kwargs.get("out_dtype", dtype)
                assert float((D.double() - ref).norm() / ref.norm()) < tol, kwargs
                assert {"sgemv_kernel", "mixed_gemm_kernel"} & set(calls) == ({kernel} if ours else set()), \
                    (n_major, kwargs, calls)
                calls.clear()
    finally:
        BoundLaunch.__call__ = bound


@pytest.mark.gpu
def test_gpu_plans_are_reused_per_signature():
    """A second call of one signature reuses the plan (no new entry) with its own data, alpha, beta and C; another
    signature (a C given, a new shape) gets its own; clear_plans forgets them."""
    import tilecraft as tc
    from tilecraft.gemm import gemv as gemv_module

    tc.gemm.clear_plans()
    for n_major in (True, False):
        outs = []
        for seed in (1, 2):
            torch.manual_seed(seed)
            A, B = gpu_operands(3, 2048, 4096, n_major)
            outs.append((A, B, sgemv(A, B, alpha=float(seed))))
        size = len(gemv_module._PLANS)
        for A, B, D in outs:
            check_fp32_gemm(A.cpu(), B.cpu(), torch.zeros(3, 2048), D.cpu(), float(1 + (D is outs[1][2])), 0.0)
        C0 = torch.randn(3, 2048, device="cuda")
        D = sgemv(outs[0][0], outs[0][1], C0.clone(), 1.0, -2.0)
        check_fp32_gemm(outs[0][0].cpu(), outs[0][1].cpu(), C0.cpu(), D.cpu(), 1.0, -2.0)
        assert len(gemv_module._PLANS) == size + 1
    tc.gemm.clear_plans()
    assert not gemv_module._PLANS


@pytest.mark.gpu
def test_gpu_captured_in_a_graph():
    """sgemv with split-K captured in a CUDA graph on a stream it has not run on (its counters made during the
    capture, zeroed only by the graph), replayed on new inputs; an eager call on that stream before any replay gets
    counters of its own."""
    torch.manual_seed(0)
    A, B = gpu_operands(4, 4096, 4096, True)
    assert pick_sgemv(4, 4096, 4096, True, 4, 132)[1] > 1
    sgemv(A, B)                                                          # compile and plan on the current stream
    torch.cuda.synchronize()
    side, graph = torch.cuda.Stream(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        out = sgemv(A, B)
    with torch.cuda.stream(side):
        D = sgemv(A, B)
    torch.cuda.synchronize()
    check_fp32_gemm(A.cpu(), B.cpu(), torch.zeros(4, 4096), D.cpu(), 1.0, 0.0)
    for _ in range(2):
        A.copy_(torch.randn_like(A))
        graph.replay()
        torch.cuda.synchronize()
        check_fp32_gemm(A.cpu(), B.cpu(), torch.zeros(4, 4096), out.cpu(), 1.0, 0.0)
