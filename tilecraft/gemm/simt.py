"""The SIMT GEMM of the CuTe tutorial (seeds 002/003, ``gemm_device``), ported line for line to the
tilecraft kernel language, and ``sgemm``, its host wrapper on torch tensors.

C = alpha * A @ B + beta * C in fp32 with thread-level FMAs: each CTA computes a BLK_M x BLK_N tile of C,
staging BLK_K-deep slices of A and B through shared memory. The only additions to the seed are the
predicates that make any M, N, K work (CuTe's identity-tensor idiom): loads outside A or B write zeros
to shared memory, and stores outside C are skipped.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tilecraft as tc
from tilecraft import _, dsl
from tilecraft.dsl import Constexpr, assume, threadIdx, blockIdx

__all__ = ["gemm_device", "SimtTiling", "sgemm", "gemm_device_args", "check_sgemm_operands"]


@dsl.kernel
def gemm_device(shape_MNK, cta_tiler: Constexpr,
                A, dA, sA_layout: Constexpr, tA: Constexpr,
                B, dB, sB_layout: Constexpr, tB: Constexpr,
                C, dC, sC_layout: Constexpr, tC: Constexpr,
                alpha, beta):
    dsl.launch_bounds(tc.size(tC))                                        # __launch_bounds__(size(CThreadLayout))

    # Preconditions
    assume(tc.rank(shape_MNK) == 3, "shape_MNK must be (M, N, K)")                      # (M, N, K)
    assume(tc.rank(cta_tiler) == 3, "cta_tiler must be (BLK_M, BLK_N, BLK_K)")         # (BLK_M, BLK_N, BLK_K)
    assume(tc.size(tA) == tc.size(tB), "tA and tB must have as many threads")           # NumThreads
    assume(tc.size(tC) == tc.size(tA), "tC and tA must have as many threads")           # NumThreads
    assume(cta_tiler[0] % tc.size(tA, 0) == 0, "BLK_M must be a multiple of THR_M of tA")  # BLK_M / THR_M
    assume(cta_tiler[2] % tc.size(tA, 1) == 0, "BLK_K must be a multiple of THR_K of tA")  # BLK_K / THR_K
    assume(cta_tiler[1] % tc.size(tB, 0) == 0, "BLK_N must be a multiple of THR_N of tB")  # BLK_N / THR_N
    assume(cta_tiler[2] % tc.size(tB, 1) == 0, "BLK_K must be a multiple of THR_K of tB")  # BLK_K / THR_K
    assume(cta_tiler[0] % tc.size(tC, 0) == 0, "BLK_M must be a multiple of THR_M of tC")  # BLK_M / THR_M
    assume(cta_tiler[1] % tc.size(tC, 1) == 0, "BLK_N must be a multiple of THR_N of tC")  # BLK_N / THR_N
    assume(tc.size(sA_layout, 0) == cta_tiler[0], "sA_layout must be (BLK_M, BLK_K)")      # BLK_M
    assume(tc.size(sC_layout, 0) == cta_tiler[0], "sC_layout must be (BLK_M, BLK_N)")      # BLK_M
    assume(tc.size(sB_layout, 0) == cta_tiler[1], "sB_layout must be (BLK_N, BLK_K)")      # BLK_N
    assume(tc.size(sC_layout, 1) == cta_tiler[1], "sC_layout must be (BLK_M, BLK_N)")      # BLK_N
    assume(tc.size(sA_layout, 1) == cta_tiler[2], "sA_layout must be (BLK_M, BLK_K)")      # BLK_K
    assume(tc.size(sB_layout, 1) == cta_tiler[2], "sB_layout must be (BLK_N, BLK_K)")      # BLK_K
    assume(tc.congruent((1, 1), dA), "dA must be the strides of an (M, K) tensor")        # dA strides for shape MK
    assume(tc.congruent((1, 1), dB), "dB must be the strides of an (N, K) tensor")        # dB strides for shape NK
    assume(tc.congruent((1, 1), dC), "dC must be the strides of an (M, N) tensor")        # dC strides for shape MN
    M, N, K = shape_MNK

    #
    # Full and Tiled Tensors
    #

    # Represent the full tensors
    mA = tc.make_tensor(dsl.make_gmem_ptr(A), (M, K), dA)                 # (M,K)
    mB = tc.make_tensor(dsl.make_gmem_ptr(B), (N, K), dB)                 # (N,K)
    mC = tc.make_tensor(dsl.make_gmem_ptr(C), (M, N), dC)                 # (M,N)

    # Get the appropriate blocks for this thread block
    cta_coord = (blockIdx.x, blockIdx.y, _)                               # (m,n,k)
    gA = tc.local_tile(mA, cta_tiler, cta_coord, (1, None, 1))            # (BLK_M,BLK_K,k)
    gB = tc.local_tile(mB, cta_tiler, cta_coord, (None, 1, 1))            # (BLK_N,BLK_K,k)
    gC = tc.local_tile(mC, cta_tiler, cta_coord, (1, 1, None))            # (BLK_M,BLK_N)

    # Shared memory buffers
    sA = dsl.smem_tensor(dsl.float32, sA_layout)                          # (BLK_M,BLK_K)
    sB = dsl.smem_tensor(dsl.float32, sB_layout)                          # (BLK_N,BLK_K)

    #
    # Partition the copying of A and B tiles across the threads
    #

    # TUTORIAL: Example of simple raked partitioning of ThreadLayouts tA|tB over data A|B tiles
    tAgA = tc.local_partition(gA, tA, threadIdx.x)                        # (THR_M,THR_K,k)
    tAsA = tc.local_partition(sA, tA, threadIdx.x)                        # (THR_M,THR_K)
    tBgB = tc.local_partition(gB, tB, threadIdx.x)                        # (THR_N,THR_K,k)
    tBsB = tc.local_partition(sB, tB, threadIdx.x)                        # (THR_N,THR_K)
    assume(tc.size(tAgA, 0) == tc.size(tAsA, 0), "THR_M of tAgA and tAsA differ")  # THR_M
    assume(tc.size(tAgA, 1) == tc.size(tAsA, 1), "THR_K of tAgA and tAsA differ")  # THR_K
    assume(tc.size(tBgB, 0) == tc.size(tBsB, 0), "THR_N of tBgB and tBsB differ")  # THR_N
    assume(tc.size(tBgB, 1) == tc.size(tBsB, 1), "THR_K of tBgB and tBsB differ")  # THR_K

    # Predication (not in the seed): the same partitions of identity tensors give each element's (m,k)
    # coordinate, so loads past M, N or K become zeros and stores past M or N are skipped.
    cA = tc.make_identity_tensor((M, K))                                  # (M,K) -> (m,k)
    cB = tc.make_identity_tensor((N, K))                                  # (N,K) -> (n,k)
    cC = tc.make_identity_tensor((M, N))                                  # (M,N) -> (m,n)
    tAcA = tc.local_partition(tc.local_tile(cA, cta_tiler, cta_coord, (1, None, 1)), tA, threadIdx.x)  # (THR_M,THR_K,k)
    tBcB = tc.local_partition(tc.local_tile(cB, cta_tiler, cta_coord, (None, 1, 1)), tB, threadIdx.x)  # (THR_N,THR_K,k)

    #
    # Define A/B partitioning and C accumulators
    #

    # TUTORIAL: Example of partitioning via projections of a ThreadLayout tC

    # Partition sA (BLK_M, BLK_K) by the rows of tC
    tCsA = tc.local_partition(sA, tC, threadIdx.x, (1, None))             # (THR_M,BLK_K)
    # Partition sB (BLK_N, BLK_K) by the cols of tC
    tCsB = tc.local_partition(sB, tC, threadIdx.x, (None, 1))             # (THR_N,BLK_K)
    # Partition gC (M, N) by the tile of tC
    tCgC = tc.local_partition(gC, tC, threadIdx.x, (1, 1))                # (THR_M,THR_N)
    tCcC = tc.local_partition(tc.local_tile(cC, cta_tiler, cta_coord, (1, 1, None)), tC, threadIdx.x)  # (THR_M,THR_N)

    # Allocate the accumulators -- same shape/layout as the partitioned data
    tCrC = tc.make_tensor_like(tCgC)                                      # (THR_M,THR_N)

    assume(tc.size(tCrC, 0) == tc.size(tCgC, 0), "THR_M of tCrC and tCgC differ")  # THR_M
    assume(tc.size(tCrC, 0) == tc.size(tCsA, 0), "THR_M of tCrC and tCsA differ")  # THR_M
    assume(tc.size(tCrC, 1) == tc.size(tCgC, 1), "THR_N of tCrC and tCgC differ")  # THR_N
    assume(tc.size(tCrC, 1) == tc.size(tCsB, 0), "THR_N of tCrC and tCsB differ")  # THR_N
    assume(tc.size(tCsA, 1) == tc.size(tCsB, 1), "BLK_K of tCsA and tCsB differ")  # BLK_K

    # Clear the accumulators
    dsl.clear(tCrC)

    # TUTORIAL: Example of a simple mainloop that read tiles of data into shared memory,
    #           and then computes on those tiles.
    #   copy(.) operates on the global and shared memory via the tA|tB partitioning
    #   gemm(.) operates on the shared and register memory via the tC partitioning

    k_tile_max = tc.size(tAgA, 2)
    for k_tile in dsl.range(k_tile_max):
        # Copy gmem to smem with tA|tB thread-partitioned tensors (zeros outside A|B)
        dsl.copy_if(dsl.elem_less(tAcA(_, _, k_tile), (M, K)), tAgA(_, _, k_tile), tAsA, zfill=True)  # A (THR_M,THR_K) -> (THR_M,THR_K)
        dsl.copy_if(dsl.elem_less(tBcB(_, _, k_tile), (N, K)), tBgB(_, _, k_tile), tBsB, zfill=True)  # B (THR_N,THR_K) -> (THR_N,THR_K)

        # (no cp.async here, so the seed's cp_async_fence() / cp_async_wait<0>() have nothing to wait for)
        dsl.syncthreads()                                                 # Wait for all threads to write to smem

        # Compute gemm on tC thread-partitioned smem
        dsl.gemm(tCsA, tCsB, tCrC)                                        # (THR_M,THR_N) += (THR_M,BLK_K) * (THR_N,BLK_K)

        dsl.syncthreads()                                                 # Wait for all threads to read from smem

    #
    # Epilogue
    #

    dsl.axpby(alpha, tCrC, beta, tCgC, pred=dsl.elem_less(tCcC, (M, N)))  # C = alpha * A B + beta * C inside (M,N)


@dataclass(frozen=True)
class SimtTiling:
    """A tiling of gemm_device: the CTA tile (BLK_M, BLK_N, BLK_K) and the thread layouts' shapes.

    tA and tB are arranged along the contiguous mode of their operand (so a warp's loads are
    coalesced), and the smem tiles follow the operand's major mode, as in the tutorial's gemm_nt/gemm_tn.
    """

    blk_m: int = 128
    blk_n: int = 128
    blk_k: int = 8
    thr_a: tuple[int, int] = (32, 8)
    thr_b: tuple[int, int] = (32, 8)
    thr_c: tuple[int, int] = (16, 16)

    @property
    def threads(self) -> int:
        return self.thr_c[0] * self.thr_c[1]


def _major_layouts(bmn: int, bk: int, thr: tuple[int, int], k_major: bool) -> tuple[Any, Any]:
    """(smem layout, thread layout) for an operand tile (BLK_MN, BLK_K), MN- or K-major."""
    order = tc.LayoutRight if k_major else tc.LayoutLeft
    return tc.make_layout((bmn, bk), order), tc.make_layout(thr, order)


def gemm_device_args(A: Any, B: Any, C: Any, alpha: float, beta: float,
                     tiling: SimtTiling = SimtTiling()) -> tuple[tuple, tuple, tuple]:
    """(args, grid, block) to launch gemm_device for C = alpha * A @ B + beta * C, with A (M,K), B (K,N) and
    C (M,N) torch tensors of any strides (the host code of the seed's gemm_nt / gemm_tn)."""
    M, K = A.shape
    N = B.shape[1]
    Bt = B.t()  # the kernel takes B as (N,K)
    dA, dB, dC = tuple(A.stride()), tuple(Bt.stride()), tuple(C.stride())
    a_kmajor, b_kmajor = dA[1] == 1 and dA[0] != 1, dB[1] == 1 and dB[0] != 1
    bM, bN, bK = tiling.blk_m, tiling.blk_n, tiling.blk_k
    sA, tA = _major_layouts(bM, bK, tiling.thr_a, a_kmajor)
    sB, tB = _major_layouts(bN, bK, tiling.thr_b, b_kmajor)
    sC = tc.make_layout((bM, bN))
    tC = tc.make_layout(tiling.thr_c)
    args = ((M, N, K), (bM, bN, bK), A, dA, sA, tA, Bt, dB, sB, tB, C, dC, sC, tC, float(alpha), float(beta))
    grid = (-(-M // bM), -(-N // bN))
    return args, grid, (tiling.threads,)


def check_f32_matrix(x: Any, name: str, who: str, dtype: Any = None) -> None:
    """Raise TypeError / ValueError unless x is a 2-D CUDA torch tensor of `dtype` (None: float32; messages name
    `who`'s argument `name`)."""
    import torch

    dtype = torch.float32 if dtype is None else dtype
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{who}: {name} must be a torch tensor, got {type(x).__name__}")
    if x.dtype != dtype:
        raise TypeError(f"{who}: {name} must be {str(dtype).replace('torch.', '')}, got {x.dtype}")
    if not x.is_cuda:
        raise ValueError(f"{who}: {name} must be on a CUDA device, got {x.device}")
    if x.dim() != 2:
        raise ValueError(f"{who}: {name} must be 2-D, got shape {tuple(x.shape)}")


def check_sgemm_operands(A: Any, B: Any, C: Any, beta: float, who: str = "sgemm",
                         dtype: Any = None) -> tuple[int, int, int, Any, float]:
    """(M, N, K, C, beta) for C = alpha * A @ B + beta * C after checking the operands: CUDA tensors of `dtype`
    (None: float32) on one device, 2-D, matching shapes, C without overlapping elements, 32-bit offsets. A new C
    (and beta 0) when C is None. Raises TypeError/ValueError saying what is wrong."""
    import torch

    for name, x in (("A", A), ("B", B)) + ((("C", C),) if C is not None else ()):
        check_f32_matrix(x, name, who, dtype)
    if A.device != B.device:
        raise ValueError(f"{who}: A is on {A.device} but B on {B.device}")
    M, K = A.shape
    if B.shape[0] != K:
        raise ValueError(f"{who}: A is {tuple(A.shape)} and B is {tuple(B.shape)}: inner dimensions differ")
    N = B.shape[1]
    if C is None:
        C = torch.empty((M, N), dtype=A.dtype, device=A.device)
        beta = 0.0
    else:
        if tuple(C.shape) != (M, N):
            raise ValueError(f"{who}: C must be ({M}, {N}), got {tuple(C.shape)}")
        if C.device != A.device:
            raise ValueError(f"{who}: C is on {C.device} but A on {A.device}")
        if any(s == 0 and n > 1 for s, n in zip(C.stride(), C.shape)):
            raise ValueError(f"{who}: C has a zero stride (an expanded view): its elements overlap")
    for name, x in (("A", A), ("B", B), ("C", C)):
        span = sum((n - 1) * s for n, s in zip(x.shape, x.stride())) if x.numel() else 0
        if span >= 2**31:
            raise ValueError(f"{who}: {name} spans {span} elements; 32-bit offsets allow fewer than 2**31")
    return M, N, K, C, beta


def sgemm(A: Any, B: Any, C: Any = None, alpha: float = 1.0, beta: float = 0.0,
          tiling: SimtTiling = SimtTiling()) -> Any:
    """C = alpha * A @ B + beta * C with the tutorial SIMT kernel; returns C (new when C is None).

    A (M,K), B (K,N) and C (M,N) are float32 CUDA tensors on one device, with any strides (row- or
    column-major, or views). As in BLAS, C is not read when beta is 0. Raises TypeError/ValueError on
    wrong dtypes, devices, ranks, shapes or overlapping outputs.
    """
    M, N, K, C, beta = check_sgemm_operands(A, B, C, beta)
    if M == 0 or N == 0:
        return C
    args, grid, block = gemm_device_args(A, B, C, alpha, beta, tiling)
    gemm_device[grid, block](*args)
    return C
