"""The dense 16-bit GEMM for few rows (tilecraft/gemm/skinny.py): the mixed-input kernel with a DenseFormat weight,
checked on the CPU emulator (both majors of B, both dtypes, split-K, stages, register buffers, x in registers,
runs) and compiled for sm_80 / sm_90a without spills; GPU tests against float64."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import emulate  # noqa: E402

from tilecraft.gemm import mixed, skinny  # noqa: E402
from tilecraft.gemm.mixed import DenseFormat, MixedConfig, mixed_gemm_kernel  # noqa: E402
from tilecraft.gemm.skinny import pick_skinny_config, skinny_gemm  # noqa: E402

gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _b(K: int, N: int, n_major: bool, dtype: Any, device: str = "cpu", pad: int = 0, seed: int = 0) -> Any:
    """B (K, N) N- or K-contiguous, its rows `pad` elements longer than they need (a strided view)."""
    g = torch.Generator().manual_seed(seed)
    if n_major:
        return torch.randn(K, N + pad, generator=g).to(dtype).to(device)[:, :N]
    return torch.randn(N, K + pad, generator=g).to(dtype).to(device)[:, :K].t()


def _check(D: Any, A: Any, B: Any, bias: Any = None) -> None:
    ref = A.double() @ B.double() + (bias.double() if bias is not None else 0)
    err = float((D.double() - ref).norm() / ref.norm())
    assert D.dtype == A.dtype and tuple(D.shape) == tuple(ref.shape)
    assert err < 4e-3, err          # one rounding of D to 16 bits (bf16: 2^-9 relative), fp32 sums


@pytest.fixture
def emulated(monkeypatch: Any) -> None:
    """skinny_gemm on CPU tensors: launches run in the emulator, the device check is skipped."""
    emulate.route_launches(monkeypatch)
    monkeypatch.setattr(skinny, "_check_device", lambda A: None)
    monkeypatch.setattr(skinny, "_RUNS", {})


#: (B N-contiguous, dtype, M, K, N, config): both majors and dtypes, M across the m-blocks (1, 8, 9, 16, 32),
#: split-K, shared-memory stages and register buffers, x in registers, runs, eight tiles
EMULATED = [
    (False, torch.bfloat16, 1, 256, 64, MixedConfig(2, 2, 64, splits=2, stages=3, async_copy=True)),
    (False, torch.float16, 8, 256, 32, MixedConfig(2, 2, 32, splits=2, stages=4, async_copy=True)),
    (False, torch.bfloat16, 13, 384, 32, MixedConfig(1, 2, 64, stages=3)),
    (False, torch.float16, 32, 256, 64, MixedConfig(2, 4, 64, splits=2, stages=3, async_copy=True, x_regs=True)),
    (False, torch.bfloat16, 5, 320, 32, MixedConfig(4, 1, 32, stages=2, async_copy=True, runs=True)),
    (True, torch.bfloat16, 1, 256, 64, MixedConfig(2, 4, 64, splits=2, stages=3, async_copy=True)),
    (True, torch.float16, 9, 256, 128, MixedConfig(2, 8, 32, stages=4, async_copy=True)),
    (True, torch.bfloat16, 16, 192, 64, MixedConfig(1, 4, 64, splits=3, stages=2)),
    (True, torch.float16, 24, 256, 64, MixedConfig(2, 4, 32, stages=3, async_copy=True, x_regs=True, runs=True)),
    (True, torch.bfloat16, 3, 128, 64, None),
    (False, torch.float16, 2, 128, 64, None),
]


@pytest.mark.parametrize("n_major,dtype,M,K,N,cfg", EMULATED)
def test_emulated(emulated: None, n_major: bool, dtype: Any, M: int, K: int, N: int, cfg: Any) -> None:
    g = torch.Generator().manual_seed(M)
    A = torch.randn(M, K, generator=g).to(dtype)
    B = _b(K, N, n_major, dtype, pad=8)
    bias = torch.randn(N, generator=g).to(dtype) if M % 2 else None
    D = skinny_gemm(A, B, bias=bias, config=cfg)
    _check(D, A, B, bias)
    if cfg is not None and cfg.splits and cfg.splits > 1:             # the workspace is left zeroed: a second call
        _check(skinny_gemm(A, B, bias=bias, config=cfg), A, B, bias)


#: (B N-contiguous, dtype, M, alpha, beta (C's dtype), bias (dtype, along), activation, config)
EPILOGUES = [
    (False, torch.bfloat16, 5, 2.0, (0.5, torch.bfloat16), (torch.float32, "n"), "gelu",
     MixedConfig(2, 2, 64, splits=2, stages=2)),
    (True, torch.float16, 12, -1.0, (1.0, torch.float32), (torch.float16, "m"), "relu",
     MixedConfig(2, 4, 32, stages=2)),
    (False, torch.float16, 40, 0.5, (0.0, None), (torch.float16, "m"), "silu", MixedConfig(2, 2, 64, stages=2)),
    (True, torch.bfloat16, 3, 1.0, (2.0, torch.bfloat16), (None, "n"), None, MixedConfig(1, 4, 32, splits=3, stages=3)),
]


@pytest.mark.parametrize("n_major,dtype,M,alpha,c,b,act,cfg", EPILOGUES)
def test_emulated_epilogue(emulated: None, n_major: bool, dtype: Any, M: int, alpha: float, c: tuple, b: tuple,
                           act: Any, cfg: MixedConfig) -> None:
    """act(alpha * A @ B + beta * C + bias): C of A's dtype or float32, row- or column-major (not read where beta is
    0), a bias per column
    or row (per row past 32 rows: two launches), in split-K too; a second call with other alpha and beta reuses the
    plan (but for alpha 1)."""
    K, N = 128, 64
    g = torch.Generator().manual_seed(M)
    A = torch.randn(M, K, generator=g).to(dtype)
    B = _b(K, N, n_major, dtype)
    (beta, c_dtype), (b_dtype, along) = c, b
    C = torch.randn(M, N, generator=g).to(c_dtype) if c_dtype else torch.full((M, N), float("nan"))
    C = C.t().contiguous().t() if n_major else C                         # a column-major C: read through its strides
    bias = torch.randn(N if along == "n" else M, generator=g).to(b_dtype) if b_dtype else None
    fn = {"gelu": torch.nn.functional.gelu, "relu": torch.relu, "silu": torch.nn.functional.silu,
          None: lambda v: v}[act]
    for a, bt in ((alpha, beta), (alpha * 3, beta * 2)):
        D = skinny_gemm(A, B, C, alpha=a, beta=bt, bias=bias, activation=act, bias_along=along, config=cfg)
        ref = a * (A.double() @ B.double()) + (bt * C.double() if bt else 0)
        ref = ref + (0 if bias is None else bias.double()[None, :] if along == "n" else bias.double()[:, None])
        ref = fn(ref)
        assert D.dtype == dtype and float((D.double() - ref).norm() / ref.norm()) < 4e-3, (a, bt)
    assert len(skinny._RUNS) == 1 + (alpha == 1.0)                         # alpha 1 is a plan without the multiply


def test_emulated_more_rows_than_a_launch(emulated: None) -> None:
    """M past MAX_M (32) runs in slices of 32 rows; A with a row stride that is not 16-byte aligned is copied."""
    A = torch.randn(40, 132).to(torch.bfloat16)[:, :128]                 # rows 264 bytes apart: copied
    B = _b(128, 64, False, torch.bfloat16)
    _check(skinny_gemm(A, B, config=MixedConfig(2, 2, 64, stages=2, async_copy=True)), A, B)


def test_format_and_operand_errors(emulated: None) -> None:
    A = torch.randn(4, 128).to(torch.bfloat16)
    with pytest.raises(TypeError, match="float16 or bfloat16"):
        skinny_gemm(A.float(), _b(128, 64, True, torch.float32))
    with pytest.raises(TypeError, match="one 16-bit dtype"):
        skinny_gemm(A, _b(128, 64, True, torch.float16))
    with pytest.raises(ValueError, match="N- or K-contiguous"):
        skinny_gemm(A, torch.randn(128, 128).to(torch.bfloat16)[:, ::2])
    with pytest.raises(ValueError, match="16-byte boundaries"):
        skinny_gemm(A, torch.randn(128, 68).to(torch.bfloat16)[:, :64])  # rows 136 bytes apart
    with pytest.raises(ValueError, match="one K"):
        skinny_gemm(A, _b(64, 64, True, torch.bfloat16))
    with pytest.raises(ValueError, match="bias"):
        skinny_gemm(A, _b(128, 64, True, torch.bfloat16), bias=torch.randn(64).to(torch.float16))
    with pytest.raises(ValueError, match="bias"):
        skinny_gemm(A, _b(128, 64, True, torch.bfloat16), bias=torch.randn(64), bias_along="m")
    with pytest.raises(ValueError, match="bias_along"):
        skinny_gemm(A, _b(128, 64, True, torch.bfloat16), bias=torch.randn(64), bias_along="k")
    with pytest.raises(ValueError, match="C must be"):
        skinny_gemm(A, _b(128, 64, True, torch.bfloat16), torch.randn(4, 32), beta=1.0)
    with pytest.raises(ValueError, match="activation"):
        skinny_gemm(A, _b(128, 64, True, torch.bfloat16), activation="tanh")
    with pytest.raises(ValueError, match="tiles must be 4 or 8"):
        skinny_gemm(A, _b(128, 64, True, torch.bfloat16), config=MixedConfig(2, 2, 64))
    with pytest.raises(ValueError, match="multiple of 32"):
        skinny_gemm(A, _b(128, 64, False, torch.bfloat16), config=MixedConfig(2, 2, 16))
    with pytest.raises(ValueError, match="no L2 prefetch"):
        skinny_gemm(A, _b(128, 64, False, torch.bfloat16), config=MixedConfig(2, 2, 64, prefetch=1))
    with pytest.raises(ValueError, match="multiple of 16 x tiles"):
        skinny_gemm(A, _b(128, 48, False, torch.bfloat16), config=MixedConfig(2, 2, 64))
    with pytest.raises(ValueError, match="no tiling for K = 128, N = 40"):
        skinny_gemm(A, _b(128, 40, False, torch.bfloat16))
    with pytest.raises(ValueError, match="no tiling for K = 128, N = 96"):
        skinny_gemm(A, _b(128, 96, True, torch.bfloat16))              # N-contiguous: N a multiple of 64


def test_empty_operands(emulated: None) -> None:
    """No rows: an empty D, nothing launched; K or N of 0: no tiling (tc.gemm keeps such calls elsewhere)."""
    D = skinny_gemm(torch.empty(0, 128).to(torch.bfloat16), _b(128, 64, False, torch.bfloat16))
    assert D.shape == (0, 64) and D.dtype == torch.bfloat16
    assert pick_skinny_config(DenseFormat("bfloat16"), 2, 0, 64) is None
    with pytest.raises(ValueError, match="no tiling for K = 128, N = 0"):
        skinny_gemm(torch.randn(2, 128).to(torch.bfloat16), torch.empty(0, 128).to(torch.bfloat16).t())


def test_device_check() -> None:
    with pytest.raises(ValueError, match="CUDA tensors"):
        skinny_gemm(torch.randn(4, 128).to(torch.bfloat16), _b(128, 64, True, torch.bfloat16))


def _args(n_major: bool, M: int, K: int, N: int, cfg: MixedConfig, dtype: Any, prefetch: int | None) -> tuple:
    fmt = DenseFormat(str(dtype).replace("torch.", ""), n_major)
    cfg.validate(fmt, K, N, M)
    qw = torch.empty(K, N, dtype=dtype) if n_major else torch.empty(N, K, dtype=dtype)
    return (torch.empty(M, K, dtype=dtype), qw, None, None, torch.empty(N, dtype=dtype), torch.empty(M, N, dtype=dtype),
            torch.empty(M, N), torch.empty(N // 16, dtype=torch.int32), fmt, cfg, -(-M // 8), mixed.stage_x_rows(cfg, M),
            prefetch)


def _compile(n_major: bool, M: int, K: int, N: int, cfg: MixedConfig, dtype: Any = torch.bfloat16,
             arch: str = "sm_90a") -> Any:
    return mixed_gemm_kernel.compile(*_args(n_major, M, K, N, cfg, dtype, 0 if arch == "sm_90a" else None), arch=arch)


@pytest.mark.parametrize("n_major", [False, True])
def test_pdl_prefetch_of_a_dense_weight_compiles(n_major: bool) -> None:
    """pdl_prefetch > 0 (an option, measured slower): bulk prefetches of the weight's first rows before the PDL wait,
    more CTA rows than threads included (8 tiles of 1 warp: 128 rows of W^T, 32 threads)."""
    for cfg in (pick_skinny_config(DenseFormat("bfloat16", n_major), 8, 4096, 4096),
                MixedConfig(1, 8, 32, stages=2, async_copy=True)):
        args = _args(n_major, 8, 4096, 4096, cfg, torch.bfloat16, 2)
        assert "prefetch_l2_bulk" in mixed_gemm_kernel.source(*args)
        assert "prefetch_l2_bulk" not in mixed_gemm_kernel.source(*args[:-1], 0)
        r = mixed_gemm_kernel.compile(*args, arch="sm_90a").resources
        assert r.spill_store_bytes == 0 and r.spill_load_bytes == 0, (cfg.name, r)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("n_major", [False, True])
def test_picks_compile_without_spills(arch: str, n_major: bool) -> None:
    for M in (1, 4, 8, 12, 16, 32):
        for K, N in ((4096, 4096), (4096, 14336), (14336, 4096)):
            cfg = pick_skinny_config(DenseFormat("bfloat16", n_major), M, K, N)
            r = _compile(n_major, M, K, N, cfg, arch=arch).resources
            assert r.spill_store_bytes == 0 and r.spill_load_bytes == 0, (M, K, N, cfg.name, r)


# ----------------------------------------------------------------------------- GPU

@gpu
@needs_cuda
@pytest.mark.parametrize("n_major", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_random_shapes(n_major: bool, dtype: Any) -> None:
    g = torch.Generator().manual_seed(7)
    for _ in range(12):
        M = int(torch.randint(1, 41, (1,), generator=g))
        N = 64 * int(torch.randint(1, 64, (1,), generator=g))
        K = 64 * int(torch.randint(1, 96, (1,), generator=g))
        A = torch.randn(M, K, generator=g).to(dtype).cuda()
        B = _b(K, N, n_major, dtype, "cuda", pad=8 * int(torch.randint(0, 3, (1,), generator=g)), seed=M)
        bias = torch.randn(N, generator=g).to(dtype).cuda() if M % 3 == 0 else None
        _check(skinny_gemm(A, B, bias=bias), A, B, bias)


@gpu
@needs_cuda
@pytest.mark.parametrize("n_major", [False, True])
def test_gpu_epilogues(n_major: bool) -> None:
    """The EPILOGUES cases at a decoding size (N = 2048, K = 4096: split-K) with the picks, against float64."""
    g = torch.Generator().manual_seed(3)
    for _n, dtype, M, alpha, (beta, c_dtype), (b_dtype, along), act, _cfg in EPILOGUES:
        A = torch.randn(M, 4096, generator=g).to(dtype).cuda()
        B = _b(4096, 2048, n_major, dtype, "cuda")
        C = torch.randn(M, 2048, generator=g).to(c_dtype or dtype).cuda()
        bias = torch.randn(2048 if along == "n" else M, generator=g).to(b_dtype).cuda() if b_dtype else None
        D = skinny_gemm(A, B, C, alpha=alpha, beta=beta, bias=bias, activation=act, bias_along=along)
        ref = alpha * (A.double() @ B.double()) + beta * C.double()
        ref = ref + (0 if bias is None else bias.double()[None, :] if along == "n" else bias.double()[:, None])
        ref = {"gelu": torch.nn.functional.gelu, "relu": torch.relu, "silu": torch.nn.functional.silu,
               None: lambda v: v}[act](ref)
        assert D.dtype == dtype and float((D.double() - ref).norm() / ref.norm()) < 4e-3, (M, act)


@gpu
@needs_cuda
def test_gpu_tc_gemm_runs_it() -> None:
    """tc.gemm on sm_90 runs the skinny GEMM (the mixed-input kernel) for the 16-bit calls of up to 16 rows that the
    swapped problem leaves (op.SWAP_ROWS, SWAP_WIDE_ROWS): a K-contiguous B at up to 8 rows (1 where it has more
    64-column blocks than SMs); with a bias (tests/gemm/test_cuda_graphs.py captures it in a CUDA graph)."""
    import tilecraft as tc
    from tilecraft.dsl.kernel import BoundLaunch

    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("tc.gemm takes the skinny GEMM on sm_90 and newer")
    calls = []
    bound = BoundLaunch.__call__
    try:
        BoundLaunch.__call__ = lambda self, *a, **k: (calls.append(self.owner.__name__), bound(self, *a, **k))[1]
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        for M, N, n_major, kernel in ((8, 1024, False, "mixed_gemm_kernel"), (1, 1024, False, "mixed_gemm_kernel"),
                                      (1, 64 * sms + 64, False, "mixed_gemm_kernel"),
                                      (2, 64 * sms + 64, False, "sm90_gemm_kernel"),
                                      (16, 1024, False, "sm90_gemm_kernel"), (5, 1024, True, "sm90_gemm_kernel")):
            A = torch.randn(M, 4096, device="cuda").to(torch.bfloat16)
            B = _b(4096, N, n_major, torch.bfloat16, "cuda")
            bias = torch.randn(N, device="cuda").to(torch.bfloat16)
            _check(tc.gemm(A, B, bias=bias), A, B, bias)
            assert calls == [kernel], (M, N, n_major, calls)
            calls.clear()
    finally:
        BoundLaunch.__call__ = bound


class _Cuda(torch.Tensor):
    """A CPU tensor that says it is on CUDA (tc.gemm's dispatch reads is_cuda only)."""

    @property
    def is_cuda(self) -> bool:
        return True


def test_tc_gemm_dispatch(monkeypatch: Any) -> None:
    """op._skinny: tc.gemm gives the skinny GEMM 16-bit calls of at most MAX_ROWS rows on sm_90 whose epilogue it has,
    but N-contiguous B at 1-2 rows (the GEMV's) and shapes without a tiling."""
    from tilecraft.gemm import op

    cc = {"cc": (9, 0)}
    monkeypatch.setattr(skinny, "_device_cc", lambda A: cc["cc"])
    monkeypatch.setattr(skinny, "_sm_count", lambda A: 132)

    def ask(M: int, N: int = 128, K: int = 256, n_major: bool = False, dtype: Any = torch.bfloat16, **kw: Any) -> bool:
        A = torch.randn(M, K).to(dtype).as_subclass(_Cuda)
        B = _b(K, N, n_major, dtype).as_subclass(_Cuda)
        args = dict(C=None, alpha=1.0, beta=0.0, bias=None, bias_along="n", activation=None, out_dtype=None,
                    scale_a=1.0, scale_b=1.0, fast_accum=None)
        args.update(kw)
        return op._skinny(A, B, **args)

    assert ask(1) and ask(2) and ask(16) and ask(3, n_major=True) and ask(16, n_major=True, dtype=torch.float16)
    assert not ask(17) and not ask(2, n_major=True) and not ask(1, n_major=True)
    assert ask(8, bias=torch.randn(128).to(torch.bfloat16)) and ask(8, activation="none")
    assert ask(8, bias=torch.randn(8).to(torch.bfloat16), bias_along="m") and ask(8, bias=torch.randn(128))
    assert ask(8, alpha=2.0) and ask(8, activation="relu") and ask(8, C=torch.randn(8, 128), beta=1.0)
    assert ask(8, C=torch.randn(8, 128).to(torch.bfloat16), beta=0.5) and ask(8, C=torch.randn(3, 5), beta=0.0)
    # what it does not take goes to the path whose checks refuse it (or that has it)
    assert not ask(8, bias=torch.randn(8), bias_along="n") and not ask(8, bias=torch.randn(128).to(torch.float16))
    assert not ask(8, bias=torch.randn(128), bias_along="x") and not ask(8, C=torch.randn(8, 128).double(), beta=1.0)
    assert not ask(8, C=torch.randn(8, 64), beta=1.0) and not ask(8, activation="tanh")
    assert not ask(8, out_dtype=torch.float32) and not ask(8, scale_a=2.0) and not ask(8, fast_accum=True)
    assert ask(8, N=132 * 64, n_major=True) and not ask(8, N=133 * 64, n_major=True)   # row blocks past the SMs
    assert ask(8, N=133 * 64)
    assert not ask(0) and not ask(8, K=0)
    assert not ask(8, N=40) and not ask(8, N=96, n_major=True) and not ask(8, K=48) and not ask(8, dtype=torch.float32)
    B = torch.randn(256, 256).to(torch.bfloat16)[:, ::2].as_subclass(_Cuda)   # neither N- nor K-contiguous
    assert not op._skinny(torch.randn(8, 256).to(torch.bfloat16).as_subclass(_Cuda), B, None, 1.0, 0.0, None, "n", None,
                          None, 1.0, 1.0, None)
    cc["cc"] = (8, 0)                                                      # measured on sm_90 only
    assert not ask(8)
