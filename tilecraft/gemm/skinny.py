"""Dense 16-bit GEMM for few rows (decoding with unquantized weights): D (M, N) = act(alpha A (M, K) @ B (K, N) +
beta C + bias) for float16 / bfloat16 operands and M up to a few dozen, the weight B read in place.

At these M the time is the time to stream B from HBM once. The kernel is the mixed-input GEMM's
(tilecraft/gemm/mixed.py) with a ``DenseFormat`` weight: mma.sync m16n8k16 computes D^T = B^T A^T with B^T as
the A operand (16 columns of D per tile, A's rows padded to 8), each lane's 16-byte loads of B are its own
operands (no barrier guards them), chunks of B travel while one is multiplied (register buffers, the picks'
choice, or ``cp.async`` stages in shared memory), split-K fills the SMs where the row blocks are few, and sm_90
launches overlap the previous kernel of the stream (programmatic dependent launches). B is read as the caller holds it:

* K-contiguous (``B = W.t()`` for an nn.Linear weight W (N, K)): lane (g, q) reads 8 values of rows g and
  g + 8 of a 16-row tile of W, which are its A operands of two k-blocks; A's k is permuted to match.
* N-contiguous (``B = W`` for W (K, N) row-major): lane (g, q) reads 8 columns 8 g .. 8 g + 7 of rows
  k = 4 q + r; pairs of rows make the A operands of four tiles at once (columns of D permuted among them,
  undone where the warps meet).

tc.gemm ran the Hopper kernel's smallest tiles at these M (64 rows of wgmma for at most 16 useful ones): 0.69-0.95x
cuBLAS on an H100, 0.57-0.92x on an H200 (benchmarks/RESULTS.md, forty-second session). ``skinny_gemm`` is the entry
point; tc.gemm gives it the calls ``op._skinny`` accepts that the swapped problem on the Hopper kernel leaves
(``op.SWAP_ROWS``: in the end a K-contiguous B of up to 8 rows, measured faster here).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from tilecraft.gemm.mixed import (MAX_M, DenseFormat, MixedConfig, _device_cc, _pick_splits, _sm_count, _workspace,
                                  mixed_gemm_kernel, pdl_ctas_per_sm, stage_x_rows)

__all__ = ["skinny_gemm", "pick_skinny_config", "skinny_format", "takes", "MAX_ROWS"]

#: the most rows of A tc.gemm gives this kernel (more run in slices of MAX_M, each streaming B again)
MAX_ROWS = 16
_DTYPES = ("float16", "bfloat16")

_RUNS: dict[Any, Any] = {}


def skinny_format(A: Any, B: Any) -> DenseFormat:
    """The DenseFormat of B as given: N-contiguous (B's stride along N is 1) or K-contiguous (along K); ValueError
    for anything else (B must have a unit stride and rows of whole 16-byte pieces, 16-byte aligned)."""
    name = str(A.dtype).replace("torch.", "")
    if name not in _DTYPES:
        raise TypeError(f"skinny_gemm takes float16 or bfloat16 operands, got A {A.dtype}")
    if B.dtype != A.dtype:
        raise TypeError(f"skinny_gemm: B is {B.dtype} but A is {A.dtype}; both must have one 16-bit dtype")
    n_major = B.stride(1) == 1 and (B.stride(0) != 1 or B.shape[0] == 1)
    if not n_major and B.stride(0) != 1:
        raise ValueError(f"skinny_gemm: B (K, N) must be N- or K-contiguous, got strides {tuple(B.stride())}")
    ld = B.stride(0) if n_major else B.stride(1)
    if B.data_ptr() % 16 or ld % 8:
        raise ValueError(f"skinny_gemm: B's rows must start on 16-byte boundaries (pointer 16-byte aligned, row "
                         f"stride a multiple of 8 elements), got stride {ld} at {B.data_ptr() % 16} bytes past one")
    return DenseFormat(name, n_major)


def pick_skinny_config(fmt: DenseFormat, M: int, K: int, N: int) -> MixedConfig | None:
    """The tiling for M rows (of at most MAX_M), B of K x N in format fmt (None where none applies: N not a multiple of
    16, or of 64 for N-contiguous B, K not of 32, either 0); splits are left to the launch. Register buffers, as an
    H100 ranked them (bf16, PDL stream, x cuBLAS at M = 1, 4, 16 x 4096², 8 x 8192², 16 x 14336 x 4096, 8 x 4096 x 14336;
    forty-second session, probe_sgemv.py): K-contiguous, two tiles, two buffers of 128-value chunks (4 warps: 1.12,
    1.10, 1.06, 1.01, 1.00, 1.06; 64-value chunks in three buffers 1.07, 1.06, 1.05, 0.98, 1.01, 1.01), in 8 warps
    from 9 rows (16 x 4096² 1.07 against 1.04, Llama-3-70B qkv 16 x 10240 x 8192 1.06 against 0.98, 16 x 4096 x
    14336 1.02 against 0.98, 16 x 28672 x 4096 1.00 against 0.98; at 8 rows it won three of five); N-contiguous, four
    tiles (a lane's loads serve four) of 8 warps, two buffers of 32 (0.95, 0.93, 0.96, 0.99, 1.03, 0.99; 4 warps of
    64 0.87-1.00). Shared-memory stages (``async_copy``) ran as well K-contiguous (1.12, 1.10, 1.10, 0.96, 0.94, 1.03
    for four stages of 64) but 0.62-0.70 N-contiguous, with x in registers too; asking L2 for the weights before the
    PDL wait (``pdl_prefetch``) lost 0.01-0.07 everywhere. Split counts above the launch's (``_pick_splits``: the
    fewest that reach nine SMs in ten) to even out the last wave won as often as they lost."""
    if N <= 0 or K <= 0:
        return None
    if fmt.n_major:
        return MixedConfig(warps=8, tiles=4, chunk=32, stages=2) if N % 64 == 0 and K % 32 == 0 else None
    tiles = 2 if N % 32 == 0 else 1
    if N % 16 or K % 32:
        return None
    if K % 128 == 0:
        return MixedConfig(warps=8 if M > 8 else 4, tiles=tiles, chunk=128, stages=2)
    return MixedConfig(warps=4, tiles=tiles, chunk=64 if K % 64 == 0 else 32, stages=3)


def takes(A: Any, B: Any) -> bool:
    """skinny_gemm takes these operands with its pick (tc.gemm's test; nothing is raised): 2-D float16 / bfloat16 CUDA
    tensors of one dtype on an sm_90 GPU (where the picks were measured), at most MAX_ROWS rows, B N- or K-contiguous
    with 16-byte aligned rows and a tiling for its shape (``pick_skinny_config``), an N-contiguous B's 64-column row
    blocks no more than the SMs. Past that the Hopper kernel's pick ran faster (H100, x cuBLAS at 4 / 8 / 16 rows:
    Llama-3-70B qkv, N = 10240, K = 8192, 0.90 / 0.89 / 0.85 against 0.94 / 0.94 / 0.98; N = 28672, K = 4096, 0.93 /
    0.99 / 0.91 against 0.95 / 1.03 / 1.02; at N = 4096..8192 0.88-1.02 against 0.69-0.94)."""
    import torch

    if not (isinstance(A, torch.Tensor) and isinstance(B, torch.Tensor)) or A.dim() != 2 or B.dim() != 2:
        return False
    if A.dtype not in (torch.float16, torch.bfloat16) or B.dtype != A.dtype or not A.is_cuda or B.device != A.device:
        return False
    if not 0 < A.shape[0] <= MAX_ROWS or A.shape[1] != B.shape[0] or A.shape[1] == 0 or _device_cc(A) < (9, 0):
        return False
    try:
        fmt = skinny_format(A, B)
    except (TypeError, ValueError):
        return False
    if fmt.n_major and B.shape[1] // 64 > _sm_count(A):
        return False
    return pick_skinny_config(fmt, A.shape[0], A.shape[1], B.shape[1]) is not None


def _check_device(A: Any) -> None:
    """A on a CUDA device of compute capability 8.0 or newer (mma.sync with bf16, cp.async)."""
    if not A.is_cuda:
        raise ValueError(f"skinny_gemm runs on CUDA tensors, got A on {A.device}")
    cc = _device_cc(A)
    if cc < (8, 0):
        raise ValueError(f"skinny_gemm needs sm_80 or newer (mma.sync with bf16, cp.async), this GPU is "
                         f"sm_{cc[0]}{cc[1]}")


def _check(A: Any, B: Any, C: Any, bias: Any, activation: str | None,
           bias_along: str) -> tuple[DenseFormat, int, int, int]:
    import torch

    from tilecraft.gemm.tensorop import ACTIVATIONS
    if not (isinstance(A, torch.Tensor) and isinstance(B, torch.Tensor)):
        raise TypeError(f"skinny_gemm takes torch tensors, got {type(A).__name__} and {type(B).__name__}")
    if A.dim() != 2 or B.dim() != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"skinny_gemm: A (M, K) and B (K, N) must be 2-D with one K, got {tuple(A.shape)} and "
                         f"{tuple(B.shape)}")
    if B.device != A.device:
        raise ValueError(f"skinny_gemm runs on one CUDA device, got A on {A.device} and B on {B.device}")
    _check_device(A)
    fmt = skinny_format(A, B)
    M, K = A.shape
    N = B.shape[1]
    if bias_along not in ("n", "m"):
        raise ValueError(f"skinny_gemm: bias_along must be 'n' (a bias per column) or 'm' (per row), got "
                         f"{bias_along!r}")
    n = N if bias_along == "n" else M
    if bias is not None and (not isinstance(bias, torch.Tensor) or tuple(bias.shape) != (n,)
                             or bias.dtype not in (A.dtype, torch.float32) or bias.device != A.device):
        raise ValueError(f"skinny_gemm: bias must be a ({n},) {A.dtype} or float32 tensor on {A.device} (along "
                         f"{bias_along!r})")
    if C is not None and (not isinstance(C, torch.Tensor) or tuple(C.shape) != (M, N)
                          or C.dtype not in (A.dtype, torch.float32) or C.device != A.device):
        raise ValueError(f"skinny_gemm: C must be an ({M}, {N}) {A.dtype} or float32 tensor on {A.device}")
    if (activation or "none") not in ACTIVATIONS:
        raise ValueError(f"skinny_gemm: activation must be None or one of {ACTIVATIONS[1:]}, got {activation!r}")
    return fmt, M, K, N


def skinny_gemm(A: Any, B: Any, C: Any = None, *, alpha: float = 1.0, beta: float = 0.0, bias: Any = None,
                activation: str | None = None, bias_along: str = "n", config: MixedConfig | None = None,
                pdl: bool | None = None, pdl_prefetch: int = 0) -> Any:
    """D (M, N) = act(alpha * A (M, K) @ B (K, N) + beta * C + bias) for float16 / bfloat16 CUDA operands of one
    dtype, summed and finished in fp32, D a new tensor in A's dtype. C (M, N) (A's dtype or float32) is read only
    where beta is not 0; bias (A's dtype or float32) has N values (``bias_along`` "n") or M ("m"); ``activation``
    None or one of "relu", "gelu", "silu". B is read in place, N- or K-contiguous, rows 16-byte aligned, N a
    multiple of 16 x the tiling's tiles and K of its chunk (``pick_skinny_config``; ``config`` overrides it,
    ``config.splits`` fixing the split-K count). A is read 16 bytes at a time (copied where its rows are not).
    ``pdl`` (None: on sm_90 and newer): programmatic dependent launches, as the mixed-input GEMM's, whose CTAs ask L2
    for ``pdl_prefetch`` sixteenths (0..16) of their weights before they wait for the previous kernel. Each call
    signature is resolved once (alpha and beta are the launch's values, not the plan's)."""
    from tilecraft.gemm.op import _memo, _signature as sig

    Cr = C if beta != 0 else None                                          # as in BLAS, C is not read when beta is 0
    key = (sig(A), sig(B), sig(Cr), sig(bias), alpha != 1.0, activation, bias_along, config, pdl, pdl_prefetch)
    run = _memo(_RUNS, key, lambda: _prepare(A, B, Cr, alpha, bias, activation, bias_along, config, pdl, pdl_prefetch))
    return run(A, B, Cr, float(alpha), float(beta), bias)


def _prepare(A: Any, B: Any, C: Any, alpha: float, bias: Any, activation: str | None, bias_along: str,
             config: MixedConfig | None, pdl: bool | None, prefetch: int) -> Any:
    import torch
    fmt, M, K, N = _check(A, B, C, bias, activation, bias_along)
    if config is not None and not isinstance(config, MixedConfig):
        raise TypeError(f"skinny_gemm: config must be a MixedConfig, got {type(config).__name__}")
    sms, cc = _sm_count(A), _device_cc(A)
    cfg = config or pick_skinny_config(fmt, M, K, N)
    if cfg is None:
        raise ValueError(f"skinny_gemm: no tiling for K = {K}, N = {N} with B {'N' if fmt.n_major else 'K'}-contiguous "
                         f"(N must be a multiple of {64 if fmt.n_major else 16}, K of 32)")
    cfg.validate(fmt, K, N, min(M, MAX_M))
    kcfg = replace(cfg, splits=None)
    if pdl not in (None, True, False):
        raise TypeError(f"skinny_gemm: pdl must be None, True or False, got {pdl!r}")
    if pdl and cc < (9, 0):
        raise ValueError("skinny_gemm(pdl=True): programmatic dependent launches need an sm_90 or newer GPU")
    pdl = cc >= (9, 0) if pdl is None else pdl
    if not (isinstance(prefetch, int) and 0 <= prefetch <= 16):
        raise ValueError(f"skinny_gemm: pdl_prefetch must be an int in 0..16 (sixteenths), got {prefetch!r}")
    if M == 0:                                                            # no rows: nothing to launch
        def empty(A: Any, *_args: Any) -> Any:
            return torch.empty(0, N, dtype=A.dtype, device=A.device)
        return empty
    clone = A.stride(1) != 1 or A.data_ptr() % 16 != 0 or A.stride(0) % 8 != 0   # 16-byte aligned rows of A
    epi = Epilogue(C is not None, alpha != 1.0, activation or "none", bias_along == "m")
    blocks = N // (16 * cfg.tiles)
    slices = []
    A2 = A.contiguous() if clone else A
    y = torch.empty(M, N, dtype=A.dtype, device=A.device)
    for m0 in range(0, M, MAX_M):
        part = _Part(fmt, cfg, kcfg, epi, pdl, prefetch, m0, whole=M <= MAX_M)
        splits = cfg.splits or _splits(part.args(A2, B, C, alpha, 0.0, bias, y), cfg, blocks, K, sms)
        part.split_k = splits > 1
        part.template = list(part.args(A2, B, C, alpha, 0.0, bias, y))
        part.bound = mixed_gemm_kernel.bind(*part.template, grid=(blocks, splits), block=(cfg.threads,), pdl=pdl,
                                            max_ctas_per_sm=pdl_ctas_per_sm(blocks * splits, sms) if pdl else None)
        slices.append(part)

    def run(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any) -> Any:
        A2 = A.contiguous() if clone else A
        y = torch.empty(M, N, dtype=A.dtype, device=A.device)
        for part in slices:
            part.launch(A2, B, C, alpha, beta, bias, y)
        return y
    run.path, run.config, run.pdl = "skinny", cfg, pdl
    return run


def _stream_workspace(cache: dict[int, tuple[Any, Any]], x: Any, M: int, N: int, blocks: int) -> tuple[Any, Any]:
    """The split-K workspace (M, N) and counters (``mixed._workspace``) of the current stream, remembered per stream by
    the plan (a query of the stream's handle per call); those first met in a CUDA graph's capture are not kept."""
    import torch

    from tilecraft.gemm.sm90 import current_stream_handle
    stream = current_stream_handle(x.device) if x.is_cuda else 0
    hit = cache.get(stream)
    if hit is None:
        ws, cnt = _workspace(x, M * N, blocks)
        hit = ws[:M * N].view(M, N), cnt[:blocks]
        if not (x.is_cuda and torch.cuda.is_current_stream_capturing()):
            cache[stream] = hit
    return hit


@dataclass(frozen=True)
class Epilogue:
    """What a launch's epilogue reads and applies: C (with beta), alpha (where not 1), an activation, the bias per
    row (else per column)."""

    c: bool
    alpha: bool
    act: str
    bias_m: bool


@dataclass
class _Part:
    """One launch of up to MAX_M rows (rows m0 ..) of a call: its kernel arguments from the call's tensors."""

    fmt: DenseFormat
    cfg: MixedConfig
    kcfg: MixedConfig
    epi: Epilogue
    pdl: bool
    prefetch: int
    m0: int
    whole: bool
    split_k: bool = True
    bound: Any = None
    template: list[Any] = field(default_factory=list)                     # the plan's arguments (``args``)
    ws: dict[int, tuple[Any, Any]] = field(default_factory=dict)          # split-K workspace views per stream

    def rows(self, t: Any) -> Any:
        return t if self.whole or t is None else t[self.m0:self.m0 + MAX_M]

    def weight(self, B: Any) -> Any:
        return B if self.fmt.n_major else B.t()                           # the kernel's qw: (K, N) or (N, K)

    def args(self, A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, y: Any) -> tuple:
        e = self.epi
        bias = self.rows(bias) if e.bias_m else bias
        return _args(self.rows(A), self.weight(B), bias, self.rows(y), self.fmt, self.cfg, self.kcfg, self.split_k,
                     self.pdl, self.prefetch) + (None, self.rows(C) if e.c else None, alpha if e.alpha else None,
                                                 beta if e.c else None, e.act, e.bias_m)

    def launch(self, A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any, y: Any) -> None:
        """One call's launch: the plan's arguments with the call's tensors and scalars put in place (what ``args``
        would build, without remaking the workspace's views: they are kept per stream)."""
        e, a = self.epi, self.template.copy()
        a[0], a[1], a[5] = self.rows(A), self.weight(B), self.rows(y)
        a[4] = self.rows(bias) if e.bias_m else bias
        a[14], a[15], a[16] = (self.rows(C) if e.c else None), (alpha if e.alpha else None), (beta if e.c else None)
        if self.split_k:
            a[6], a[7] = _stream_workspace(self.ws, a[0], *a[5].shape, self.template[7].shape[0])
        self.bound(*a)


def _args(x: Any, qw: Any, bias: Any, y: Any, fmt: DenseFormat, cfg: MixedConfig, kcfg: MixedConfig, split_k: bool,
          pdl: bool, prefetch: int = 0) -> tuple:
    """mixed_gemm_kernel's arguments for a dense weight (the workspace of x's device and stream with split-K;
    prefetch: the sixteenths of its weights a programmatic dependent launch asks L2 for before its wait)."""
    M, N = y.shape
    blocks = N // (16 * cfg.tiles)
    ws, cnt = _workspace(x, M * N, blocks) if split_k else (None, None)
    return (x, qw, None, None, bias, y, ws[:M * N].view(M, N) if split_k else None, cnt[:blocks] if split_k else None,
            fmt, kcfg, -(-M // 8), stage_x_rows(cfg, M), prefetch if pdl else None)


def _splits(args: tuple, cfg: MixedConfig, blocks: int, K: int, sms: int) -> int:
    """The split-K count of one launch (its kernel arguments with split-K): ``mixed._pick_splits`` with the compiled
    kernel's occupancy (3 CTAs per SM off a GPU, for the emulator's tests)."""
    import torch
    per_sm = 3
    if args[0].is_cuda:
        with torch.cuda.device(args[0].device):
            per_sm = mixed_gemm_kernel.max_active_blocks(*args, block=(cfg.threads,))
    return _pick_splits(blocks, K // cfg.chunk, cfg.warps, sms * per_sm, sms)
