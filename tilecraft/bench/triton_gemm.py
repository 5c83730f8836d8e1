"""The Triton GEMM contender: the usual tiled kernel (grouped tile order, K loop, fp32 accumulator).

It lives in the package, not in ``benchmarks/``, so the contender registry can import it wherever
tilecraft is installed; ``benchmarks/triton_gemm.py`` is a thin script around it.

Only long-stable Triton API is used (``tl.program_id``, ``tl.arange``, masked ``tl.load``/``tl.store``,
``tl.dot``, ``triton.autotune``, ``triton.cdiv``) because the GPU machine runs an older Triton than the
development machine.

fp32 is computed with ``input_precision="ieee"`` (true single precision on the FMA units), the same
arithmetic as cuBLAS SGEMM under torch's default ``allow_tf32=False``; ``precision="tf32"`` gives the
tensor-core variant, reported as ``tf32``. fp16/bf16/fp8 inputs always use tensor cores with an fp32
accumulator.

Importing this module imports triton and torch.
"""
from __future__ import annotations

import inspect
import os
from typing import Any

import torch
import triton
import triton.language as tl

__all__ = ["matmul", "CONFIGS"]


def _cfg(bm: int, bn: int, bk: int, stages: int, warps: int, group: int = 8) -> triton.Config:
    return triton.Config(
        {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group}, num_stages=stages, num_warps=warps
    )


# A few configs per (element size, M regime); the prune below keeps one family per call so autotuning
# stays at 3-4 candidates a shape (the anchor sweep autotunes ~70 shapes).
CONFIGS: dict[tuple[int, str], list[triton.Config]] = {
    (2, "large"): [
        _cfg(128, 256, 64, 3, 8),
        _cfg(256, 128, 64, 3, 8),
        _cfg(128, 128, 64, 4, 4),
        _cfg(64, 128, 64, 4, 4),
    ],
    (2, "small"): [
        _cfg(16, 64, 128, 4, 4),
        _cfg(16, 128, 128, 4, 4),
        _cfg(32, 64, 128, 4, 4),
        _cfg(64, 64, 128, 4, 4),
    ],
    (4, "large"): [
        _cfg(128, 128, 32, 3, 8),
        _cfg(128, 64, 32, 4, 4),
        _cfg(64, 128, 32, 4, 4),
    ],
    (4, "small"): [
        _cfg(16, 64, 64, 4, 4),
        _cfg(32, 64, 64, 4, 4),
        _cfg(64, 64, 32, 4, 4),
    ],
    (1, "large"): [
        _cfg(128, 256, 128, 3, 8),
        _cfg(128, 128, 128, 4, 8),
        _cfg(64, 128, 128, 4, 4),
    ],
    (1, "small"): [
        _cfg(16, 64, 256, 4, 4),
        _cfg(32, 64, 256, 4, 4),
        _cfg(64, 64, 128, 4, 4),
    ],
}
def _config_key(c: triton.Config) -> tuple:
    # Compared by value, not identity: an autotuner may hold copies of the Config objects.
    return (tuple(sorted(c.kwargs.items())), c.num_warps, c.num_stages)


# Families share some configs; the autotuner gets each once.
_ALL_CONFIGS = list({_config_key(c): c for cs in CONFIGS.values() for c in cs}.values())


_FAMILY_KEYS = {fam: {_config_key(c) for c in cs} for fam, cs in CONFIGS.items()}


def _prune(configs: list[triton.Config], named_args: dict[str, Any], **kwargs: Any) -> list[triton.Config]:
    esize = named_args["a_ptr"].element_size()
    regime = "small" if named_args["M"] <= 64 else "large"
    wanted = _FAMILY_KEYS.get((esize, regime), set())
    kept = [c for c in configs if _config_key(c) in wanted] or configs[:1]
    if os.environ.get("TRITON_INTERPRET") == "1":
        # The interpreter (CPU tests) has no device to benchmark on; a single config skips tuning.
        kept = kept[:1]
    return kept


def _fast_do_bench(kernel_call: Any, quantiles: Any = None) -> Any:
    # Autotuning only ranks a handful of configs; the default 25+100 ms per config would put minutes
    # of tuning into a sweep. The ranking is re-checked by the real timer afterwards anyway.
    return triton.testing.do_bench(kernel_call, warmup=5, rep=25, quantiles=quantiles)


_autotune_kwargs: dict[str, Any] = {"prune_configs_by": {"early_config_prune": _prune}}
if "do_bench" in inspect.signature(triton.autotune).parameters:
    _autotune_kwargs["do_bench"] = _fast_do_bench


@triton.autotune(configs=_ALL_CONFIGS, key=["M", "N", "K", "INPUT_PRECISION"], **_autotune_kwargs)
@triton.jit
def _matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    INPUT_PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    # Grouped ordering: GROUP_M consecutive programs walk down a column of tiles, so the B tiles they
    # share are reused from L2 instead of refetched.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    # Rows/cols past the edge wrap around instead of being masked: the loads stay unmasked in M and N,
    # and the store mask drops the duplicates.
    offs_am = offs_m % M
    offs_bn = offs_n % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kt in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - kt * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    out: torch.Tensor | None = None,
    *,
    out_dtype: torch.dtype | None = None,
    precision: str = "ieee",
    config: triton.Config | None = None,
) -> torch.Tensor:
    """C = A @ B with the Triton kernel; any strides for A (M,K) and B (K,N).

    ``out_dtype`` defaults to A's dtype, except bf16 for fp8 inputs. ``precision`` matters for fp32
    inputs only: ``"ieee"`` (default, SGEMM-equivalent) or ``"tf32"``. ``config`` (one of
    :data:`CONFIGS`) bypasses autotuning.
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul shapes do not fit: {tuple(a.shape)} @ {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise TypeError(f"A and B must share a dtype, got {a.dtype} and {b.dtype}")
    if precision not in ("ieee", "tf32"):
        raise ValueError(f"precision must be 'ieee' or 'tf32', got {precision!r}")
    M, K = a.shape
    N = b.shape[1]
    if out_dtype is None:
        out_dtype = torch.bfloat16 if a.element_size() == 1 else a.dtype
    if out is None:
        out = torch.empty((M, N), device=a.device, dtype=out_dtype)
    input_precision = precision if a.dtype == torch.float32 else "tf32"

    def grid(meta: dict[str, Any]) -> tuple[int]:
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    kernel, meta = _matmul_kernel, {}
    if config is not None:
        kernel = _matmul_kernel.fn  # the bare jit function under the autotuner
        meta = dict(config.kwargs, num_warps=config.num_warps, num_stages=config.num_stages)
    kernel[grid](
        a, b, out,
        M, N, K,
        a.stride(0), a.stride(1),
        b.stride(0), b.stride(1),
        out.stride(0), out.stride(1),
        INPUT_PRECISION=input_precision,
        **meta,
    )
    return out
