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
    D = skinny_gemm(A, B, bias, config=cfg)
    _check(D, A, B, bias)
    if cfg is not None and cfg.splits and cfg.splits > 1:             # the workspace is left zeroed: a second call
        _check(skinny_gemm(A, B, bias, config=cfg), A, B, bias)


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
        skinny_gemm(A, _b(128, 64, True, torch.bfloat16), torch.randn(64))
    with pytest.raises(ValueError, match="tiles must be 4 or 8"):
        skinny_gemm(A, _b(128, 64, True, torch.bfloat16), config=MixedConfig(2, 2, 64))
    with pytest.raises(ValueError, match="multiple of 32"):
        skinny_gemm(A, _b(128, 64, False, torch.bfloat16), config=MixedConfig(2, 2, 16))
    with pytest.raises(ValueError, match="no L2 prefetch"):
        skinny_gemm(A, _b(128, 64, False, torch.bfloat16), config=MixedConfig(2, 2, 64, prefetch=1))
    with pytest.raises(ValueError, match="multiple of 16 x tiles"):
        skinny_gemm(A, _b(128, 48, False, torch.bfloat16))


def test_device_check() -> None:
    with pytest.raises(ValueError, match="CUDA tensors"):
        skinny_gemm(torch.randn(4, 128).to(torch.bfloat16), _b(128, 64, True, torch.bfloat16))


def _compile(n_major: bool, M: int, K: int, N: int, cfg: MixedConfig, dtype: Any = torch.bfloat16,
             arch: str = "sm_90a") -> Any:
    fmt = DenseFormat(str(dtype).replace("torch.", ""), n_major)
    cfg.validate(fmt, K, N, M)
    qw = torch.empty(K, N, dtype=dtype) if n_major else torch.empty(N, K, dtype=dtype)
    return mixed_gemm_kernel.compile(torch.empty(M, K, dtype=dtype), qw, None, None, torch.empty(N, dtype=dtype),
                                     torch.empty(M, N, dtype=dtype), torch.empty(M, N),
                                     torch.empty(N // 16, dtype=torch.int32), fmt, cfg, -(-M // 8),
                                     mixed.stage_x_rows(cfg, M), 0 if arch == "sm_90a" else None, arch=arch)


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
        _check(skinny_gemm(A, B, bias), A, B, bias)
