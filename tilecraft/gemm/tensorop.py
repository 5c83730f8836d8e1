"""The portable Tensor Core GEMM (sm80 and later: A100, L40, RTX, Hopper) in the kernel language.

    D (L,M,N) = act(alpha * A (L,M,K) @ B (L,K,N) + beta * C (L,M,N) + bias)

CUTLASS's sm80 multistage GEMM (seed 004), written CuTe's way (the tutorial's ``sgemm_sm80``):

* **Tiles.** A CTA computes a (BLK_M, BLK_N) tile of D; its warps (WARPS_M x WARPS_N) each own a
  (BLK_M/WARPS_M, BLK_N/WARPS_N) sub-tile, made of m16n8k16 tensor-core instructions (``mma.sync``,
  fp32 accumulators in registers). The tiled MMA's N permutation gives each warp pairs of n8 atoms, so
  B's fragments load 16 columns at a time.
* **Global -> shared without registers.** ``cp.async`` (LDGSTS) moves 16 bytes per thread straight into
  shared memory, into STAGES buffers (the multistage pipeline: STAGES-1 k-tiles are in flight while one
  is consumed). Each k-tile's copies are one cp.async group; ``cp.async.wait_group STAGES-2`` plus a
  barrier make the oldest one visible.
* **Shared -> registers.** ``ldmatrix`` (LDSM) loads the MMA fragments, ``.trans`` for an MN-major
  operand, from smem swizzled so that both cp.async's 16-byte writes and ldmatrix's 16-byte row reads
  are bank-conflict free. The fragments of k-block k+1 load while k-block k computes.
* **Edges.** With ``full`` (the host checks M, N, K and alignment) nothing is predicated; otherwise the
  same partitions of identity tensors predicate every 16-byte copy (cp.async zero-fills what lies outside
  A or B) and every store. Vectors never straddle an edge: the host guarantees the contiguous extents are
  multiples of 8 elements (padding the operand otherwise).
* **Rasterization.** CTAs are numbered along M in groups of ``raster`` m-tiles (Triton's grouped order,
  CUTLASS's threadblock swizzle): CTAs that run together share A and B tiles in L2.
* **Epilogue.** alpha, beta (C read only when the host says beta != 0), bias along N or M, relu / gelu /
  silu, cast to D's type, straight from the accumulators (each thread stores pairs of adjacent columns).
* **Sliced-K.** ``warps_k`` > 1 adds k-slices of warps (CUTLASS's sliced-K, warp shape K < tile K): the
  tiled MMA's third warp mode takes turns along K, so k-slice s computes k-blocks s, s + warps_k, ... of
  every k-tile on the same C coordinates. After the main loop slices 1.. store their fp32 accumulators to
  the (reused) pipeline smem, 16-byte vectors thread-fastest (conflict-free), and after a barrier slice 0
  adds them in slice order (deterministic) and alone runs the epilogue. More warps per tile and fewer
  accumulators per warp: for tiles too small along M and N to occupy enough warps (skinny shapes, long K).
* **Split-K.** ``splits`` > 1 divides the k-tiles among CTAs (grid z). ``parallel``: each split writes its
  fp32 partial tile to a workspace, a second kernel (``splitk_reduce_kernel``) sums the splits and applies
  the epilogue. ``serial``: the splits of a tile take turns through a flag in global memory (split s waits
  for s, adds its partial to an fp32 workspace tile, the last applies the epilogue): in-order, deterministic,
  one kernel.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import tilecraft as tc
from tilecraft import _, dsl
from tilecraft.atoms import (
    SM80_16x8x8_F32TF32TF32F32_TN, SM80_16x8x16_F32BF16BF16F32_TN, SM80_16x8x16_F32F16F16F32_TN, cp_async,
    gmma_layout_atom, ldmatrix, make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B, make_tiled_mma,
    smem_swizzle_atom, universal_copy,
)
from tilecraft.dsl import Constexpr, blockIdx, hopper, threadIdx
from tilecraft.dsl.expr import make
from tilecraft.gemm.limits import CTA_SMEM
from tilecraft.layout.inttuple import imax, imin
from tilecraft.tensor import Tensor

__all__ = ["TensorOpConfig", "EpilogueSpec", "tensorop_gemm_kernel", "splitk_reduce_kernel", "SplitReduce", "ACTIVATIONS",
           "ELEMENT_TYPES"]

ACTIVATIONS = ("none", "relu", "gelu", "silu")
#: operand element type -> (kernel dtype, MMA atom)
ELEMENT_TYPES = {
    "float16": (dsl.float16, SM80_16x8x16_F32F16F16F32_TN),
    "bfloat16": (dsl.bfloat16, SM80_16x8x16_F32BF16BF16F32_TN),
    "tf32": (dsl.float32, SM80_16x8x8_F32TF32TF32F32_TN),
}


@dataclass(frozen=True)
class TensorOpConfig:
    """One tiling of the tensor-op GEMM.

    CTA tile (blk_m, blk_n, blk_k), warps_m x warps_n warps, ``stages`` smem buffers (2..5), ``raster``
    m-tiles per CTA group (1: plain m-fastest order), ``splits`` k-slices with ``split_mode`` "serial" or
    "parallel" (ignored when splits == 1), ``min_blocks`` the second ``__launch_bounds__`` argument.

    Opt-in variants (off by default, so the heuristic's kernels do not change): ``lean_loop`` carries the
    main loop's read / write stages as rotating counters and the global k-offsets as running element
    offsets advanced by a precomputed step (no modulo, no clamp, no multiply per k-tile; the last
    STAGES-1 iterations skip their prefetch through one uniform branch instead). ``smem_epilogue`` stages
    the output tile through the pipeline's shared memory (rows padded by 16 bytes, so the fragments'
    32-bit pair stores are bank-conflict free) and writes D with 16-byte stores along its contiguous mode,
    a warp covering whole 128-byte lines; it applies to whole tiles (the unpredicated kernel) of a D with the
    operands' element type and 16-byte aligned rows, without split-K (elsewhere the register epilogue runs).

    Sliced-K: ``warps_k`` > 1 k-slices of warps_m x warps_n warps each (threads = 32 x warps_m x warps_n x
    warps_k) share the CTA tile and split every k-tile's MMA k-blocks; blk_k must give each k-slice at
    least two k-blocks (256-byte k-tiles are allowed for it). After the main loop their fp32 accumulators
    are added in shared memory (the pipeline's, reused), and k-slice 0 runs the epilogue. It combines with
    split-K (both modes), the lean loop and the staged epilogue.
    """

    blk_m: int = 128
    blk_n: int = 128
    blk_k: int = 32
    warps_m: int = 2
    warps_n: int = 2
    stages: int = 3
    raster: int = 8
    splits: int = 1
    split_mode: str = "parallel"
    min_blocks: int = 1
    lean_loop: bool = False
    smem_epilogue: bool = False
    warps_k: int = 1

    @property
    def threads(self) -> int:
        """Threads per CTA (32 per warp)."""
        return 32 * self.warps_m * self.warps_n * self.warps_k

    @property
    def name(self) -> str:
        """A short label: tile, warps, stages (and raster, split-K when used)."""
        s = f"{self.blk_m}x{self.blk_n}x{self.blk_k}_w{self.warps_m}x{self.warps_n}_s{self.stages}"
        if self.raster != 8:
            s += f"_r{self.raster}"
        if self.splits > 1:
            s += f"_sk{self.splits}{self.split_mode[0]}"
        if self.min_blocks != 1:
            s += f"_b{self.min_blocks}"
        if self.lean_loop:
            s += "_lean"
        if self.smem_epilogue:
            s += "_se"
        if self.warps_k > 1:
            s += f"_wk{self.warps_k}"
        return s

    def smem_bytes(self, elem_bytes: int = 2) -> int:
        """Shared memory of the A and B stages; with sliced-K, of the k-slices' fp32 partial tiles (behind
        the staged D tile) when the epilogue needs more of the same buffer than the pipeline."""
        pipeline = (self.blk_m + self.blk_n) * self.blk_k * self.stages * elem_bytes
        if self.warps_k == 1:
            return pipeline
        staged = _staged_d_bytes(self.blk_m, self.blk_n, elem_bytes) if self.smem_epilogue else 0
        return max(pipeline, staged + (self.warps_k - 1) * self.blk_m * self.blk_n * 4)

    def validate(self, elem_bytes: int = 2) -> None:
        """Raise ValueError naming the condition a tiling breaks."""
        k_atom = 16 if elem_bytes == 2 else 8
        if not 2 <= self.stages <= 6:
            raise ValueError(f"{self.name}: stages must be 2..6")
        if self.blk_m % (16 * self.warps_m) or self.blk_n % (16 * self.warps_n):
            raise ValueError(f"{self.name}: blk_m / blk_n must be multiples of 16 x warps_m / warps_n")
        if self.warps_k < 1:
            raise ValueError(f"{self.name}: warps_k must be >= 1")
        if self.threads > 1024:
            raise ValueError(f"{self.name}: {self.threads} threads exceed a CTA's 1024 (32 warps)")
        # sliced-K also takes 256-byte k-tiles (two 128-byte swizzle atoms along K): 4 k-slices of 2 k-blocks
        k_bytes = (32, 64, 128) if self.warps_k == 1 else (32, 64, 128, 256)
        if self.blk_k % k_atom or self.blk_k * elem_bytes not in k_bytes:
            raise ValueError(f"{self.name}: blk_k must be {', '.join(map(str, k_bytes[:-1]))} or {k_bytes[-1]} "
                             "bytes of elements")
        if self.blk_k < 2 * k_atom * self.warps_k:
            # the main loop waits for k-tile i+1 at its last k-block, before k-tile i's prefetch is
            # committed: with one k-block that is a group too early (the wait would cover only k-tile i).
            # Sliced-K: each k-slice of warps computes every warps_k-th k-block of a k-tile
            if self.warps_k == 1:
                raise ValueError(f"{self.name}: blk_k must hold at least two MMA k-blocks ({2 * k_atom} elements)")
            raise ValueError(f"{self.name}: blk_k must hold at least two MMA k-blocks per k-slice "
                             f"({2 * k_atom} x warps_k = {2 * k_atom * self.warps_k} elements)")
        if self.split_mode not in ("serial", "parallel") or self.splits < 1:
            raise ValueError(f"{self.name}: split_mode must be 'serial' or 'parallel' and splits >= 1")
        vec = 16 // elem_bytes
        tiles = [(mn, self.blk_k) for mn in (self.blk_m, self.blk_n)]
        if self.smem_epilogue:
            tiles.append((self.blk_m, self.blk_n))                        # the staged D tile's 16-byte stores
        for mn, k in tiles:
            # the two layouts of _g2s_copy: threads along K (K-major) or along MN (MN-major) first
            for thr_c, other in ((k // vec, mn), (min(mn // vec, self.threads), k)):
                if self.threads % thr_c or other % (self.threads // thr_c):
                    raise ValueError(f"{self.name}: a {mn}x{k} tile does not split into 16-byte "
                                     f"copies among {self.threads} threads")
        if self.smem_bytes(elem_bytes) > CTA_SMEM:
            raise ValueError(f"{self.name}: {self.smem_bytes(elem_bytes)} bytes of smem exceed the 227 KB of an SM")


@dataclass(frozen=True)
class EpilogueSpec:
    """What the epilogue computes (all compile-time): read C (beta != 0), alpha == 1, the bias ("none",
    "n": one value per column, "m": one per row), the activation, and the element types of C/D."""

    read_c: bool = False
    unit_alpha: bool = True
    bias: str = "none"
    activation: str = "none"


def _smem_layout(dtype: Any, major: str, mn: int, bk: int, stages: int) -> Any:
    """(MN, BLK_K, STAGES) swizzled smem for one operand: K-major rows of blk_k elements, swizzled so
    16-byte cp.async writes and ldmatrix row reads avoid bank conflicts, or MN-major 64-element columns."""
    elem = dtype.bits
    if major == "K":
        atom = smem_swizzle_atom(elem, min(128, bk * elem // 8))         # (8, BLK_K) swizzled
    else:
        atom = gmma_layout_atom("MN", 128, elem)                          # (64, 8) swizzled
    return tc.tile_to_shape(atom, (mn, bk, stages))


def _g2s_copy(dtype: Any, major: str, mn: int, bk: int, threads: int, atom: Any = None) -> Any:
    """The cp.async tiled copy of an (MN, BLK_K) tile: 16 bytes per thread along the contiguous mode,
    threads contiguous-mode first (a warp's copies cover whole 128-byte lines). Another 16-byte ``atom``
    gives the same tiling (the staged epilogue's shared -> global stores)."""
    vec = 128 // dtype.bits
    atom = cp_async(16, dtype.bits, cache="global") if atom is None else atom
    if major == "K":
        tk = bk // vec
        return make_tiled_copy(atom, tc.make_layout((threads // tk, tk), (tk, 1)), tc.make_layout((1, vec)))
    tm = min(mn // vec, threads)
    return make_tiled_copy(atom, tc.make_layout((tm, threads // tm)), tc.make_layout((vec, 1)))


def _s2r_atom(dtype: Any, major: str) -> Any:
    """ldmatrix (.trans for MN-major 16-bit operands); 32-bit MN-major operands load element by element."""
    if dtype.bits == 16:
        return ldmatrix(4, trans=major != "K", val=16)
    if major == "K":
        return ldmatrix(4, val=32)
    return universal_copy(32, val=32)


def make_mma(cfg: TensorOpConfig, elem: str) -> Any:
    """The tiled MMA: warps_m x warps_n x warps_k atoms, N permuted so each warp covers 16 columns per
    step. Sliced-K: the warps_k k-slices of warps share every C coordinate and take turns along K, k-slice
    s computing k-blocks s, s + warps_k, ... of each k-tile (thread = lane + 32 * (m + WARPS_M * (n +
    WARPS_N * s)))."""
    _, atom = ELEMENT_TYPES[elem]
    return make_tiled_mma(atom, (cfg.warps_m, cfg.warps_n, cfg.warps_k),
                          (16 * cfg.warps_m, 16 * cfg.warps_n, atom.shape_mnk[2] * cfg.warps_k))


def _activation(x: Any, act: str) -> Any:
    return x if act == "none" else make("call", (f"tc::{act}", x), "float")


def epilogue_value(acc: Any, c: Any, bias: Any, alpha: Any, beta: Any, ep: EpilogueSpec) -> Any:
    """act(alpha * acc + beta * c + bias) in fp32 (c and bias None when not used)."""
    x = acc if ep.unit_alpha else alpha * acc
    if ep.read_c:
        x = x + beta * c
    if ep.bias != "none":
        x = x + bias
    return _activation(x, ep.activation)


def _cta_tile(cfg: TensorOpConfig, M: Any, N: Any) -> tuple[Any, Any]:
    """(m_tile, n_tile) of this CTA from blockIdx.x: groups of `raster` m-tiles, m fastest in a group."""
    tiles_m, tiles_n = tc.ceil_div(M, cfg.blk_m), tc.ceil_div(N, cfg.blk_n)
    if cfg.raster <= 1:
        return blockIdx.x % tiles_m, blockIdx.x // tiles_m
    group = cfg.raster * tiles_n                                          # CTAs per group of m-tiles
    first_m = blockIdx.x // group * cfg.raster
    rows = imin(tiles_m - first_m, cfg.raster)                            # m-tiles in this group
    in_group = blockIdx.x % group
    return first_m + in_group % rows, in_group // rows


@dsl.kernel
def tensorop_gemm_kernel(A, B, C, D, bias, alpha, beta, W, flags, cfg: Constexpr, elem: Constexpr,
                         ep: Constexpr, full: Constexpr):
    """D (L,M,N) = epilogue(alpha * A (L,M,K) @ B (L,N,K)^T, C, bias); see the module docstring.

    W is the fp32 workspace of split-K ((S,L,M,N) partials for "parallel", (L,M,N) for "serial") and
    flags the serial mode's (L, tiles) turn counters; both None without split-K."""
    dsl.launch_bounds(cfg.threads, cfg.min_blocks)
    dtype, _atom = ELEMENT_TYPES[elem]
    bM, bN, bK = cfg.blk_m, cfg.blk_n, cfg.blk_k
    L, M, K = A.shape
    N = B.shape[1]
    a_major = "K" if A.stride[2] == 1 and isinstance(A.stride[2], int) else "M"
    b_major = "K" if B.stride[2] == 1 and isinstance(B.stride[2], int) else "N"

    #
    # This CTA's batch, split and tile
    #
    S = cfg.splits
    l_idx = blockIdx.z % L if S > 1 else blockIdx.z                       # z = split * L + batch
    split = blockIdx.z // L if S > 1 else 0
    m_tile, n_tile = _cta_tile(cfg, M, N)
    mA = A(l_idx, _, _)                                                   # (M,K)
    mB = B(l_idx, _, _)                                                   # (N,K)
    cta_tiler = (bM, bN, bK)
    cta_coord = (m_tile, n_tile, _)
    gA = tc.local_tile(mA, cta_tiler, cta_coord, (1, None, 1))            # (BLK_M,BLK_K,k)
    gB = tc.local_tile(mB, cta_tiler, cta_coord, (None, 1, 1))            # (BLK_N,BLK_K,k)
    k_tiles = tc.ceil_div(K, bK)
    if S > 1:
        per_split = tc.ceil_div(k_tiles, S)
        k_begin = split * per_split                                       # first k-tile of this split
        k_count = imax(imin(per_split, k_tiles - k_begin), 0)             # k-tiles of this split
    else:
        k_begin, k_count = 0, k_tiles

    #
    # Shared memory: STAGES swizzled buffers per operand
    #
    sA_layout = _smem_layout(dtype, a_major, bM, bK, cfg.stages)
    sB_layout = _smem_layout(dtype, b_major, bN, bK, cfg.stages)
    d_major = "N" if D.stride[2] == 1 and isinstance(D.stride[2], int) else "M"
    staged = cfg.smem_epilogue and S == 1 and full and _vector_ok(D, d_major, dtype)  # D goes out through smem
    sliced = cfg.warps_k > 1                                              # k-slices of warps meet in smem
    if staged or sliced:
        # one buffer: A's stages, then B's; after the main loop the epilogue reuses it for the D tile and
        # (behind it) the k-slices' fp32 partial accumulators
        sD_layout = _staged_d_layout(d_major, bM, bN, dtype.bits) if staged else None
        sD_size = tc.cosize(sD_layout) if staged else 0                   # elements of dtype
        sR_layout = _reduction_layout(cfg) if sliced else None           # (FRG,THR,SLICE) fp32
        sR_size = tc.cosize(sR_layout) * 32 // dtype.bits if sliced else 0
        pipe = dsl.smem_tensor(dtype, max(tc.cosize(sA_layout) + tc.cosize(sB_layout), sD_size + sR_size),
                               align=1024)
        sA = Tensor(pipe.engine, sA_layout)                               # (BLK_M,BLK_K,PIPE)
        sB = Tensor(pipe.engine, sB_layout, tc.cosize(sA_layout))         # (BLK_N,BLK_K,PIPE)
    else:
        sA = dsl.smem_tensor(dtype, sA_layout, align=1024)                # (BLK_M,BLK_K,PIPE)
        sB = dsl.smem_tensor(dtype, sB_layout, align=1024)                # (BLK_N,BLK_K,PIPE)

    #
    # Global -> shared: cp.async, 16 bytes per thread and copy
    #
    g2s_A = _g2s_copy(dtype, a_major, bM, bK, cfg.threads).get_slice(threadIdx.x)
    g2s_B = _g2s_copy(dtype, b_major, bN, bK, cfg.threads).get_slice(threadIdx.x)
    tAgA = g2s_A.partition_S(gA)                                          # (CPY,CPY_M,CPY_K,k)
    tAsA = g2s_A.partition_D(sA)                                          # (CPY,CPY_M,CPY_K,PIPE)
    tBgB = g2s_B.partition_S(gB)                                          # (CPY,CPY_N,CPY_K,k)
    tBsB = g2s_B.partition_D(sB)                                          # (CPY,CPY_N,CPY_K,PIPE)
    if not full:
        # the same partitions of identity tensors: each copied vector's first (m,k) / (n,k)
        cA = tc.local_tile(tc.make_identity_tensor((M, K)), cta_tiler, cta_coord, (1, None, 1))  # (BLK_M,BLK_K,k)
        cB = tc.local_tile(tc.make_identity_tensor((N, K)), cta_tiler, cta_coord, (None, 1, 1))  # (BLK_N,BLK_K,k)
        tAcA = g2s_A.partition_S(cA)                                      # (CPY,CPY_M,CPY_K,k) -> (m,k)
        tBcB = g2s_B.partition_S(cB)                                      # (CPY,CPY_N,CPY_K,k) -> (n,k)

    def copy_tile(k_tile: Any, stage: Any, src_A: Any = None, src_B: Any = None) -> None:
        """k-tile k_tile (absolute) of A and B -> smem stage (cp.async, not yet committed); src_A / src_B:
        that k-tile's global views where the caller has them already (the lean loop's running offsets)."""
        src_A = tAgA(_, _, _, k_tile) if src_A is None else src_A
        src_B = tBgB(_, _, _, k_tile) if src_B is None else src_B
        if full:
            dsl.copy(g2s_A, src_A, tAsA(_, _, _, stage))
            dsl.copy(g2s_B, src_B, tBsB(_, _, _, stage))
        else:
            dsl.copy(g2s_A, src_A, tAsA(_, _, _, stage), pred=dsl.elem_less(tAcA(_, _, _, k_tile), (M, K)))
            dsl.copy(g2s_B, src_B, tBsB(_, _, _, stage), pred=dsl.elem_less(tBcB(_, _, _, k_tile), (N, K)))

    def load_tile(k_tile: Any, stage: Any) -> None:
        """k-tile k_tile (absolute) of A and B -> smem stage, as one cp.async group."""
        copy_tile(k_tile, stage)
        dsl.cp_async_commit()

    def clamp_tile(i: Any) -> Any:
        """The absolute k-tile of this split's i-th, clamped into A and B: past the split's end the
        pipeline refetches a valid tile that is never read (no branch in the main loop)."""
        if S == 1:
            return imin(i, k_tiles - 1)
        return imax(imin(k_begin + imin(i, k_count - 1), k_tiles - 1), 0)

    #
    # Thread partitions of the tiled MMA: fragments in registers, ldmatrix views of smem
    #
    mma = make_mma(cfg, elem)
    thr_mma = mma.get_slice(threadIdx.x)
    tCrA = thr_mma.partition_fragment_A(sA(_, _, 0))                      # (MMA,MMA_M,MMA_K)
    tCrB = thr_mma.partition_fragment_B(sB(_, _, 0))                      # (MMA,MMA_N,MMA_K)
    s2r_A = make_tiled_copy_A(_s2r_atom(dtype, a_major), mma).get_slice(threadIdx.x)
    s2r_B = make_tiled_copy_B(_s2r_atom(dtype, b_major), mma).get_slice(threadIdx.x)
    tXsA = s2r_A.partition_S(sA)                                          # (CPY,CPY_M,CPY_K,PIPE)
    tXrA = s2r_A.retile_D(tCrA)                                           # (CPY,CPY_M,CPY_K)
    tXsB = s2r_B.partition_S(sB)                                          # (CPY,CPY_N,CPY_K,PIPE)
    tXrB = s2r_B.retile_D(tCrB)                                           # (CPY,CPY_N,CPY_K)
    gD = tc.local_tile(D(l_idx, _, _), cta_tiler, cta_coord, (1, 1, None))  # (BLK_M,BLK_N)
    tCrC = thr_mma.partition_fragment_C(gD, dsl.float32)                  # (MMA,MMA_M,MMA_N) fp32 accumulators
    dsl.clear(tCrC)
    k_blocks = tc.size(tCrA, 2)

    #
    # Prologue: STAGES-1 k-tiles in flight, then wait for the first and load its first fragments
    #
    for s in range(cfg.stages - 1):
        load_tile(clamp_tile(s), s)
    dsl.cp_async_wait(cfg.stages - 2)
    dsl.syncthreads()
    dsl.copy(s2r_A, tXsA(_, _, 0, 0), tXrA(_, _, 0))
    dsl.copy(s2r_B, tXsB(_, _, 0, 0), tXrB(_, _, 0))

    #
    # Main loop: k-tile i computes from stage i % STAGES while k-tile i + STAGES-1 travels to the stage
    # freed by k-tile i-1; the fragments of k-block kb+1 load while k-block kb computes
    #
    if cfg.lean_loop:
        # the same schedule with fewer integer instructions per k-tile: rotating stage counters instead
        # of i % STAGES, k-offsets advanced by a precomputed step instead of clamp * stride, and no
        # prefetch (one uniform branch) for the last STAGES-1 k-tiles instead of refetching a clamped one
        read = dsl.declare(0, "read", const=False)                        # the stage of k-tile i
        write = dsl.declare(cfg.stages - 1, "write", const=False)         # the stage of k-tile i + STAGES-1
        vec = 128 // dtype.bits                                           # offsets keep 16-byte alignment
        off_A = dsl.declare(tAgA(_, _, _, k_begin + cfg.stages - 1).offset, "off_A", const=False, div=vec)
        off_B = dsl.declare(tBgB(_, _, _, k_begin + cfg.stages - 1).offset, "off_B", const=False, div=vec)
        step_A = tAgA(_, _, _, 1).offset - tAgA(_, _, _, 0).offset       # elements between k-tiles
        step_B = tBgB(_, _, _, 1).offset - tBgB(_, _, _, 0).offset
        prefetches = k_count - (cfg.stages - 1)                           # iterations that prefetch
        for i in dsl.range(k_count):
            for kb in range(k_blocks):
                if kb == k_blocks - 1:
                    dsl.cp_async_wait(cfg.stages - 2)
                    dsl.syncthreads()
                    dsl.assign(read, dsl.where(read < cfg.stages - 1, read + 1, 0))
                kb_next = (kb + 1) % k_blocks
                dsl.copy(s2r_A, tXsA(_, _, kb_next, read), tXrA(_, _, kb_next))
                dsl.copy(s2r_B, tXsB(_, _, kb_next, read), tXrB(_, _, kb_next))
                if kb == 0:
                    with dsl.if_(i < prefetches):
                        src_A, src_B = tAgA(_, _, _, 0), tBgB(_, _, _, 0)
                        copy_tile(k_begin + i + cfg.stages - 1, write, Tensor(src_A.engine, src_A.layout, off_A),
                                  Tensor(src_B.engine, src_B.layout, off_B))
                        dsl.assign(off_A, off_A + step_A)
                        dsl.assign(off_B, off_B + step_B)
                    dsl.cp_async_commit()                                 # empty groups keep wait_group's count
                    dsl.assign(write, dsl.where(write < cfg.stages - 1, write + 1, 0))
                dsl.gemm(mma, tCrA(_, _, kb), tCrB(_, _, kb), tCrC)
    else:
        for i in dsl.range(k_count):
            read = i % cfg.stages                                             # the stage of k-tile i
            for kb in range(k_blocks):
                if kb == k_blocks - 1:
                    # the next k-tile's stage must have landed (and every warp be done with stage i-1)
                    dsl.cp_async_wait(cfg.stages - 2)
                    dsl.syncthreads()
                kb_next = (kb + 1) % k_blocks
                stage_next = read if kb + 1 < k_blocks else (i + 1) % cfg.stages
                dsl.copy(s2r_A, tXsA(_, _, kb_next, stage_next), tXrA(_, _, kb_next))
                dsl.copy(s2r_B, tXsB(_, _, kb_next, stage_next), tXrB(_, _, kb_next))
                if kb == 0:
                    load_tile(clamp_tile(i + cfg.stages - 1), (i + cfg.stages - 1) % cfg.stages)
                dsl.gemm(mma, tCrA(_, _, kb), tCrB(_, _, kb), tCrC)           # (MMA,MMA_M,MMA_N) += A_kb B_kb

    #
    # Sliced-K: k-slices 1.. leave their accumulators in smem, k-slice 0 adds them (in slice order) and
    # runs the epilogue alone; every thread still meets the barriers below (and the semaphore's)
    #
    if sliced:
        k_slice = thr_mma.thr_vmnk[3]                                     # this warp's k-slice
        thr = threadIdx.x % (cfg.threads // cfg.warps_k)                  # its thread: the same C coordinates
        sR = dsl.recast_smem(pipe, sD_size, dsl.float32, sR_layout)       # (FRG,THR,SLICE) fp32
        dsl.cp_async_wait(0)                                              # no prefetch may still land in smem,
        dsl.syncthreads()                                                 # and every warp is done reading it
        with dsl.if_(k_slice > 0):
            dsl.copy(tCrC, sR(_, thr, k_slice - 1))                       # (MMA,MMA_M,MMA_N) -> (FRG)
        dsl.syncthreads()
        with dsl.if_(dsl.eq(k_slice, 0)):
            for s in range(cfg.warps_k - 1):
                tCrP = tc.make_fragment_like(tCrC)                        # k-slice s+1's partial sums
                dsl.copy(sR(_, thr, s), tCrP)
                for i in range(tc.size(tCrC)):
                    tCrC[i] = tCrC(i) + tCrP(i)
    leader = dsl.if_(dsl.eq(k_slice, 0)) if sliced else nullcontext()    # the threads that own D

    #
    # Epilogue
    #
    cD = tc.local_tile(tc.make_identity_tensor((M, N)), cta_tiler, cta_coord, (1, 1, None))  # (BLK_M,BLK_N) -> (m,n)
    tCcD = thr_mma.partition_C(cD)                                        # (MMA,MMA_M,MMA_N) -> (m,n)
    if S > 1 and cfg.split_mode == "parallel":
        # this split's fp32 partial tile -> workspace W(split, l); the reduction kernel does the epilogue
        tCgW = thr_mma.partition_C(tc.local_tile(W(split, l_idx, _, _), cta_tiler, cta_coord, (1, 1, None)))
        with leader:
            _store(tCrC, tCgW, tCcD, M, N, full)
        return
    tCgD = thr_mma.partition_C(gD)                                        # (MMA,MMA_M,MMA_N)
    tCgC = thr_mma.partition_C(tc.local_tile(C(l_idx, _, _), cta_tiler, cta_coord, (1, 1, None))) \
        if ep.read_c else None                                            # (MMA,MMA_M,MMA_N)
    if S > 1:
        # serial split-K: wait for this tile's turn, accumulate into the fp32 workspace, pass the turn
        flag = (l_idx, n_tile * tc.ceil_div(M, bM) + m_tile)             # this tile's turn counter
        tCgW = thr_mma.partition_C(tc.local_tile(W(l_idx, _, _), cta_tiler, cta_coord, (1, 1, None)))
        dsl.semaphore_wait(flags, flag, split)
        with leader:
            with dsl.if_(split > 0):
                _accumulate(tCgW, tCrC, tCcD, M, N, full)
            with dsl.if_(split < S - 1):
                _store(tCrC, tCgW, tCcD, M, N, full)
            with dsl.else_():
                _epilogue(tCrC, tCgC, tCgD, tCcD, bias, alpha, beta, ep, M, N, full)
        dsl.semaphore_release(flags, flag, (split + 1) % S)                      # the last split resets the flag to 0
        return
    if not staged:
        with leader:
            _epilogue(tCrC, tCgC, tCgD, tCcD, bias, alpha, beta, ep, M, N, full)
        return
    sD = Tensor(pipe.engine, sD_layout)                                   # (BLK_M,BLK_N)
    if sliced:
        # the pipeline's smem is free already (the reduction waited), and sD lies before sR
        with leader:
            tCrD = _epilogue_values(tCrC, tCgC, tCgD, tCcD, bias, alpha, beta, ep, M, N, full)
            dsl.copy(tCrD, thr_mma.partition_C(sD))                       # fragments -> smem (pairs of columns)
    else:
        tCrD = _epilogue_values(tCrC, tCgC, tCgD, tCcD, bias, alpha, beta, ep, M, N, full)
        dsl.cp_async_wait(0)                                              # no prefetch may still land in smem,
        dsl.syncthreads()                                                 # and every warp is done reading it
        dsl.copy(tCrD, thr_mma.partition_C(sD))                           # fragments -> smem (pairs of columns)
    dsl.syncthreads()
    s2g = _g2s_copy(dtype, "K" if d_major == "N" else "M", bM, bN, cfg.threads,
                    universal_copy(128, val=dtype.bits)).get_slice(threadIdx.x)
    tDsD = s2g.partition_S(sD)                                            # (CPY,CPY_M,CPY_N)
    tDgD = s2g.partition_D(gD)                                            # (CPY,CPY_M,CPY_N)
    dsl.copy(s2g, tDsD, tDgD)


def _vector_ok(D: Any, d_major: str, dtype: Any) -> bool:
    """Whether D takes 16-byte stores of whole tiles: the operands' element type, a 16-byte aligned
    pointer, a unit stride along d_major and the other strides multiples of 16 bytes (batch included).
    Tiles are whole (``full``), so no vector straddles an edge."""
    vec = 128 // dtype.bits
    if D.dtype.ctype != dtype.ctype or D.engine.align < 16:
        return False
    contiguous = 2 if d_major == "N" else 1
    if not (isinstance(D.stride[contiguous], int) and D.stride[contiguous] == 1):
        return False
    others = [st for d, st in enumerate(D.stride) if d != contiguous]
    return all((st if isinstance(st, int) else st.div) % vec == 0 for st in others)


def _staged_d_layout(d_major: str, bM: int, bN: int, bits: int) -> Any:
    """(BLK_M,BLK_N) smem of the staged D tile (elements of `bits` bits), contiguous along D's contiguous
    mode, each row (column) padded by 16 bytes: the MMA fragment's stores (8 rows x 4 pairs of columns per
    warp instruction) then fall into 32 different banks, and the 16-byte reads along a row stay aligned."""
    pad = 128 // bits
    if d_major == "N":
        return tc.make_layout((bM, bN), (bN + pad, 1))
    return tc.make_layout((bM, bN), (1, bM + pad))


def _staged_d_bytes(bM: int, bN: int, elem_bytes: int) -> int:
    """The most smem the staged D tile takes (either major)."""
    return max(tc.cosize(_staged_d_layout(m, bM, bN, 8 * elem_bytes)) for m in "MN") * elem_bytes


def _reduction_layout(cfg: TensorOpConfig) -> Any:
    """(FRG,THR,SLICE) fp32 smem of sliced-K's partial accumulators: thread t of k-slice s > 0 leaves its
    FRG accumulators at (_, t, s-1), where thread t of k-slice 0 (the same C coordinates) picks them up.
    16-byte vectors, threads fastest: a warp's 16-byte stores and loads cover 512 contiguous bytes (no
    bank conflicts)."""
    thr = cfg.threads // cfg.warps_k                                      # threads per k-slice
    frg = cfg.blk_m * cfg.blk_n // thr                                    # accumulators per thread
    return tc.make_layout(((4, frg // 4), thr, cfg.warps_k - 1), ((1, 4 * thr), 4, thr * frg))


def _pred(tCcD: Any, i: int, M: Any, N: Any, full: bool) -> Any:
    """Whether element i of a thread's C partition lies inside (M, N) (True when the trace is full)."""
    return True if full else dsl.elem_less(tCcD(i), (M, N))


def _store(acc: Any, dst: Any, tCcD: Any, M: Any, N: Any, full: bool) -> None:
    """dst = acc (fp32, inside (M, N))."""
    if full:
        dsl.copy(acc, dst)
    else:
        dsl.copy_if(dsl.elem_less(tCcD, (M, N)), acc, dst)


def _accumulate(src: Any, acc: Any, tCcD: Any, M: Any, N: Any, full: bool) -> None:
    """acc += src (fp32 memory, zero outside (M, N))."""
    for i in range(tc.size(acc)):
        acc[i] = acc(i) + dsl.read_if(_pred(tCcD, i, M, N, full), src, i, 0.0)


def _epilogue(acc: Any, tCgC: Any, tCgD: Any, tCcD: Any, bias: Any, alpha: Any, beta: Any, ep: EpilogueSpec,
              M: Any, N: Any, full: bool) -> None:
    """D = act(alpha * acc + beta * C + bias), cast to D's type in registers, then stored (pairs of
    adjacent columns per access where D's layout allows)."""
    tCrD = _epilogue_values(acc, tCgC, tCgD, tCcD, bias, alpha, beta, ep, M, N, full)
    _store(tCrD, tCgD, tCcD, M, N, full)


def _epilogue_values(acc: Any, tCgC: Any, tCgD: Any, tCcD: Any, bias: Any, alpha: Any, beta: Any,
                     ep: EpilogueSpec, M: Any, N: Any, full: bool) -> Any:
    """The fragment act(alpha * acc + beta * C + bias) in D's type (MMA,MMA_M,MMA_N)."""
    tCrD = tc.make_fragment_like(tCgD)                                    # (MMA,MMA_M,MMA_N) in D's type
    for i in range(tc.size(acc)):
        tCrD[i] = epilogue_value_at(i, acc, tCgC, tCcD, bias, alpha, beta, ep, M, N, full)
    return tCrD


def epilogue_value_at(i: int, acc: Any, tCgC: Any, tCcD: Any, bias: Any, alpha: Any, beta: Any, ep: EpilogueSpec,
                      M: Any, N: Any, full: bool) -> Any:
    """The fp32 epilogue value of element i of a thread's C partition (C read and bias indexed inside (M, N))."""
    m, n = tCcD(i)
    c = None
    if ep.read_c:
        c = dsl.read_if(_pred(tCcD, i, M, N, full), tCgC, i, 0.0)
    b = None
    if ep.bias != "none":
        j = n if ep.bias == "n" else m
        b = bias(j if full else imin(j, (N if ep.bias == "n" else M) - 1))
    return epilogue_value(acc(i), c, b, alpha, beta, ep)


@dsl.kernel
def splitk_reduce_kernel(W, C, D, bias, alpha, beta, ep: Constexpr, threads: Constexpr, dependent: Constexpr = False,
                         vec: Constexpr = 1):
    """D (L,M,N) = epilogue(sum over s of W (S,L,M,N), C, bias): parallel split-K's second kernel. Each thread
    sums `vec` consecutive elements of D (4: 16-byte loads of the partials, where D is N-contiguous and N a
    multiple of 4), consecutive threads along D's contiguous mode (coalesced). ``dependent`` (sm_90): the
    kernel is a programmatic dependent launch (``pdl=True``) after the splits' kernel, whose CTAs let it start
    early (``griddep_launch_dependents``); it waits for their partials (``griddep_wait``) before touching memory."""
    dsl.launch_bounds(threads)
    if dependent:
        hopper.griddep_wait()
    S, L, M, N = W.shape
    n_major = D.stride[2] == 1 and isinstance(D.stride[2], int)
    V = vec
    dsl.assume(V == 1 or n_major, "vec = 4 needs an N-contiguous D")
    idx = blockIdx.x * threads + threadIdx.x
    total = L * M * N // V
    with dsl.if_(idx < total):
        if n_major:
            n, m, l_idx = idx % (N // V) * V, idx // (N // V) % M, idx // (M * (N // V))
        else:
            m, n, l_idx = idx % M, idx // M % N, idx // (M * N)
        acc = dsl.make_rmem_tensor(dsl.float32, V)                        # the running sums over splits
        if V == 1:
            acc[0] = W(0, l_idx, m, n)
            for s in dsl.range(1, S):
                acc[0] = acc(0) + W(s, l_idx, m, n)
        else:
            part = dsl.make_rmem_tensor(dsl.float32, V)
            dsl.copy(tc.local_tile(W(0, l_idx, m, _), (V,), (n // V,)), acc)
            for s in dsl.range(1, S, unroll=8):                           # several loads in flight per thread
                dsl.copy(tc.local_tile(W(s, l_idx, m, _), (V,), (n // V,)), part)
                for v in range(V):
                    acc[v] = acc(v) + part(v)
        for v in range(V):
            c = C(l_idx, m, n + v) if ep.read_c else None
            b = bias(n + v if ep.bias == "n" else m) if ep.bias != "none" else None
            D[l_idx, m, n + v] = epilogue_value(acc(v), c, b, alpha, beta, ep)


def whole_splits(k_tiles: int, splits: int) -> int:
    """The splits a split-K kernel makes of `k_tiles` k-tiles when asked for `splits`, each taking ceil(k_tiles /
    splits) of them: fewer where the last ones would be empty (10 k-tiles in 4 splits: 3, 3, 3, 1; 9 in 4: 3, 3,
    3). The Hopper GEMM's (``sm90.effective_splits``) and the SIMT SGEMM's splits."""
    if k_tiles < 1 or splits < 1:
        return 1
    return -(-k_tiles // -(-k_tiles // splits))


class SplitReduce:
    """``splitk_reduce_kernel`` bound once for one signature (every parallel split-K: sm80, sm90 and the
    mixed-input kernels): D3 (L,M,N) = epilogue ep of the sum of the fp32 partial tiles W (S,L,M,N), with
    C3, bias, alpha and beta read at each call. ``workspace(D3)`` allocates a call's partials. ``pdl``
    (sm_90): launched as a programmatic dependent launch of the splits' kernel, which must execute
    ``griddep_launch_dependents`` (the Hopper GEMM does)."""

    threads = 256

    def __init__(self, W: Any, C3: Any, D3: Any, bias: Any, alpha: Any, beta: Any, ep: EpilogueSpec,
                 pdl: bool = False):
        import torch
        L, M, N = D3.shape
        self.shape, self.ep, self.f32, self.pdl = tuple(W.shape), ep, torch.float32, pdl
        self.vec = self.elements_per_thread(W, D3)
        self.kernel = splitk_reduce_kernel.bind(W, C3, D3, bias, alpha, beta, ep, self.threads, pdl, self.vec,
                                                grid=(-(-(L * M * N // self.vec) // self.threads),),
                                                block=(self.threads,), pdl=pdl)

    @staticmethod
    def elements_per_thread(W: Any, D3: Any) -> int:
        """4 (16-byte loads of the partials) where D3 has at least 2^20 elements, is N-contiguous with N a
        multiple of 4, and W is contiguous (every row of W then starts 16-byte aligned); else 1. Measured on
        an H100 inside the Hopper GEMM's split-K (session 27): 4 per thread took 193.6 µs against 199.3 at
        1024x1024x65536 (2 splits), but 63.5 against 62.8 at 512x512x65536 (8 splits), where a quarter of the
        CTAs leave too few per SM."""
        L, M, N = D3.shape
        return 4 if L * M * N >= 1 << 20 and D3.stride(2) == 1 and N % 4 == 0 and W.is_contiguous() else 1

    def workspace(self, D3: Any) -> Any:
        return D3.new_empty(self.shape, dtype=self.f32)

    def __call__(self, W: Any, C3: Any, D3: Any, bias: Any, alpha: Any = 1.0, beta: Any = 0.0) -> None:
        self.kernel(W, C3, D3, bias, alpha, beta, self.ep, self.threads, self.pdl, self.vec)
