"""A tuned SIMT SGEMM in the kernel language: C = alpha * A @ B + beta * C in IEEE fp32 with FFMA.

The tutorial's ``gemm_device`` (simt.py) reads shared memory one float at a time, keeps one smem buffer
(two barriers per k-tile) and waits for global loads before computing. This kernel keeps its shape
(full tensors -> CTA tiles -> thread partitions -> main loop -> epilogue) and changes what makes the
difference on the hardware:

* **Register tiling with 128-bit smem reads.** Each thread owns a (THR_M_VALS, THR_N_VALS) block of C
  (8x8 for a 128x128 tile and 256 threads) made of 4x4 groups 64 rows / columns apart. A permutation of
  the tile's m and n coordinates (CuTe's TiledMMA permutation) makes the plain raked ``local_partition``
  hand each thread 4 contiguous elements per group, so every operand fragment load is one LDS.128; a
  warp's lanes cover 4x8 (or 8x4) threads, so its LDS.128 read 4 (8) distinct 16-byte words: broadcast,
  no bank conflicts.
* **smem holds both operands m/n-contiguous** ((BLK_M, BLK_K) with the m stride 1), whatever their global
  major; a K-major operand is transposed on its way in (4 STS.32 per 128-bit global load), and its rows
  are padded by 4 floats so those transposing stores are conflict-free too.
* **Double buffering** (CUTLASS's pipelined SIMT main loop): two smem stages, the next k-tile's global
  loads (LDG.128) issued at the first k-step and stored to the other stage at the last one, the operand
  fragments double-buffered in registers so the first fragment of the next tile is read across the one
  barrier per k-tile while the last k-step's FFMAs run.
* **cp.async copies** (``cp_async=True``, unpredicated kernel only): the register-staged copy above
  leaves ptxas to place the LDGs, and at the 8x16 tiles' 255 registers it sinks them to ~60% of the
  k-tile, so the STS wait on them right before the barrier. With cp.async nothing is staged in
  registers: the copies for k-tile + S-1 leave at the first k-step into a ring of ``stages`` smem
  stages (one commit group per k-tile, ``wait_group S-2`` before the barrier). An m/n-major operand
  moves 16 bytes per copy; a K-major one one float per copy, 8 threads along k, which both reads whole
  32-byte sectors and transposes into the padded m-contiguous smem without bank conflicts.
* **Register banks** (``opt_level=1``). An FFMA that reads three source registers from the register file, or
  two from one bank (register number mod 2), waits for a second read cycle; an operand that the previous
  FFMA read in the same slot and flagged ``.reuse`` costs no read. ``dsl.gemm`` issues the outer product in
  runs along the longer mode with one operand fixed, serpentine, so every FFMA can take one operand from the
  reuse cache. On the 8x16 tiles ptxas's default -O3 reorders the FFMAs into 4x4 blocks and leaves 28-40% of
  them with two reads in one bank and ~20% with three reads; at -O1 it keeps the runs and allocates the
  accumulators against the operands' banks: 1-3% same-bank pairs, 12-18% three reads (mostly at k-step
  boundaries). That took the 8x16 tilings from 0.78-0.88x cuBLAS to 0.86-0.92x (H100, eighteenth session);
  at -O1 alone they issued in 80% of the slots against cuBLAS's 90% (the k-step fence below is why). The
  8x8 tilings at 128 registers come out of -O3 with the serpentine runs and 1-4% same-bank pairs, and with
  16 warps per SM they issue in 88% of the slots: 128x128x16 (FALLBACK) runs 0.94-0.99x cuBLAS.
* **The k-step fence** (``fence=True``). The source loads step k+1's fragments before step k's FFMAs, but
  NVVM sinks each load next to its first use, and -O1 ptxas issues in the PTX's order: the LDS.128 land 2-14
  instructions before the FFMAs that read them, and with two warps per scheduler (8x16 tiles) the LDS latency
  stalls both. ``dsl.compiler_barrier()`` (an empty ``asm volatile`` with a memory clobber) between the loads
  and the FFMAs keeps the loads a whole k-step (~130 instructions) ahead, at no instruction cost: the 8x16
  cp.async tilings went from 0.92-0.93x to 1.01-1.02x cuBLAS (H100, nineteenth session). They also spend
  ~1% less energy per FLOP than cuBLAS there, and run at full clock under the 700 W limit, where the 8x8
  tilings (more smem and L2 reads per FFMA) lose 2-3% of theirs.
* ``__launch_bounds__(threads, min_blocks)`` keeps ptxas at the register budget of 2 CTAs per SM (128
  registers) for the 8x8 tiles; the CTA order can be rasterized in groups of n-tiles.

Split-K (``splits`` > 1, ``pick_sgemm_splits``): where the tiles leave SMs' CTA slots empty (M = 64 against
N = 8192, 512³), each split (blockIdx.z) sums its share of the k-tiles into its slice of an fp32 workspace, and
the GEMMs' split reduction kernel (tensorop.splitk_reduce_kernel) adds the slices up with alpha and beta.

Predication: with ``full`` (the host checks M, N, K are multiples of the CTA tile, 16-byte aligned
pointers and leading dimensions that are multiples of 4) the kernel has no predicates at all. Otherwise
the same kernel is traced with CuTe's identity-tensor predicates: global loads outside A or B become
zeros (scalar loads), stores outside C are skipped; the smem -> register -> FFMA core is unchanged, and
the register budget is one CTA per SM's (the predicates do not fit in 128 registers without spills).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import tilecraft as tc
from tilecraft import _, dsl
from tilecraft.atoms import cp_async
from tilecraft.dsl import Constexpr, assume, blockIdx, threadIdx
from tilecraft.dsl.partition import permute_modes, vector_permutation
from tilecraft.gemm.tensorop import whole_splits
from tilecraft.layout.inttuple import imin
from tilecraft.tensor import Tensor

__all__ = ["SgemmConfig", "CONFIGS", "DEFAULT", "FALLBACK", "SMALL", "THIN", "sgemm_tuned_kernel", "sgemm_tuned_args",
           "sgemm_tuned", "is_full", "pick_sgemm_config", "pick_sgemm_splits", "whole_splits", "MAX_SPLITS",
           "SPLIT_MIN_K"]

VEC = 4  # floats per 128-bit access
ASYNC_LANES_K = 8  # threads along k in the 4-byte cp.async copy of a K-major operand (one 32-byte sector)


@dataclass(frozen=True)
class SgemmConfig:
    """A tiling of the tuned SGEMM.

    CTA tile (blk_m, blk_n, blk_k); a warp's 32 lanes arranged lanes_m x lanes_n over the threads'
    (m, n) grid, warps arranged warps_m x warps_n; each thread computes
    (blk_m / thr_m) x (blk_n / thr_n) elements of C in 4x4 groups. ``min_blocks`` is the second
    ``__launch_bounds__`` argument; ``pad`` floats pad each smem k-row; ``raster`` > 1 launches a 1-D
    grid in which consecutive CTAs take ``raster`` neighbouring n-tiles of one m-tile before moving on
    in m (1: a 2-D grid, m fastest). ``opt_level`` is ptxas's optimization level (see the module
    docstring's register banks). ``cp_async`` moves the unpredicated kernel's global -> smem copies
    to cp.async into a ring of ``stages`` smem stages (see the module docstring); the predicated trace
    keeps the register-staged two-stage copies whatever these say. ``fence`` puts a compiler barrier
    between each k-step's fragment loads and its FFMAs (see the module docstring's k-step fence).
    """

    blk_m: int = 128
    blk_n: int = 128
    blk_k: int = 8
    lanes_m: int = 4
    lanes_n: int = 8
    warps_m: int = 4
    warps_n: int = 2
    min_blocks: int = 2
    pad: int = 4
    raster: int = 1
    cp_async: bool = False
    stages: int = 2
    opt_level: int = 3
    fence: bool = False

    @property
    def thr_m(self) -> int:
        """Threads along m."""
        return self.lanes_m * self.warps_m

    @property
    def thr_n(self) -> int:
        """Threads along n."""
        return self.lanes_n * self.warps_n

    @property
    def threads(self) -> int:
        """Threads per CTA."""
        return self.thr_m * self.thr_n

    @property
    def name(self) -> str:
        """A short label: tile, lane arrangement, launch bound, raster."""
        s = f"{self.blk_m}x{self.blk_n}x{self.blk_k}_w{self.lanes_m}x{self.lanes_n}_t{self.threads}_b{self.min_blocks}"
        s += f"_r{self.raster}" if self.raster > 1 else ""
        s += f"_a{self.stages}" if self.cp_async else ""
        s += f"_O{self.opt_level}" if self.opt_level != 3 else ""
        return s + ("_f" if self.fence else "")

    def smem_stages(self, full: bool) -> int:
        """The smem stages the kernel allocates: ``stages`` for the cp.async copies, else 2."""
        return self.stages if self.cp_async and full else 2

    def validate(self) -> None:
        """Raise ValueError naming the divisibility condition a tiling breaks."""
        if self.lanes_m * self.lanes_n != 32:
            raise ValueError(f"{self}: lanes_m * lanes_n must be 32")
        if self.opt_level not in (0, 1, 2, 3):
            raise ValueError(f"{self}: opt_level must be a ptxas optimization level, 0..3")
        if self.stages < 2 or (self.stages != 2 and not self.cp_async):
            raise ValueError(f"{self}: stages must be >= 2, and other than 2 only with cp_async")
        for what, blk, thr in (("blk_m", self.blk_m, self.thr_m), ("blk_n", self.blk_n, self.thr_n)):
            if blk % (thr * VEC):
                raise ValueError(f"{self}: {what}={blk} must be a multiple of {VEC} x its {thr} threads")
        for what, blk in (("blk_m", self.blk_m), ("blk_n", self.blk_n)):
            for c, o in ((blk, self.blk_k), (self.blk_k, blk)):  # both global majors
                thr_c = c // VEC
                if c % VEC or self.threads % thr_c or o % (self.threads // thr_c):
                    raise ValueError(f"{self}: the {what} x blk_k tile cannot be split into {VEC}-float "
                                     f"vectors among {self.threads} threads")
            lanes_k = min(self.blk_k, ASYNC_LANES_K)  # the 4-byte cp.async copy of a K-major operand
            if self.cp_async and (self.blk_k % lanes_k or self.threads % lanes_k or blk % (self.threads // lanes_k)):
                raise ValueError(f"{self}: the {what} x blk_k tile cannot be split into single floats among "
                                 f"{self.threads} threads, {lanes_k} along k")


#: The tilings the benchmark compares (names are SgemmConfig.name). Why each:
CONFIGS: dict[str, SgemmConfig] = {c.name: c for c in (
    SgemmConfig(),                                            # 128x128x8, 8x8 per thread, 2 CTAs/SM
    SgemmConfig(lanes_m=8, lanes_n=4),                        # the other lane arrangement
    SgemmConfig(blk_k=16),                                    # half the barriers, twice the loads in flight
    SgemmConfig(raster=8),                                    # L2-friendlier CTA order
    SgemmConfig(blk_n=256, min_blocks=1),                     # 8x16 per thread (more FFMA per LDS), 1 CTA/SM
    SgemmConfig(blk_m=256, lanes_m=8, lanes_n=4, warps_m=2, warps_n=4, min_blocks=1),  # 16x8 per thread
    SgemmConfig(blk_m=64, blk_n=128, warps_m=2, warps_n=2, min_blocks=4),  # 128 threads, 8x8, 4 CTAs/SM
    SgemmConfig(blk_m=128, blk_n=64, lanes_m=8, lanes_n=4, warps_m=2, warps_n=2, min_blocks=4),
    # the 8x16 tile with cp.async: the next k-tiles' loads leave at the start of a k-tile, no STS burst
    SgemmConfig(blk_n=256, min_blocks=1, cp_async=True, stages=3),
    SgemmConfig(blk_n=256, blk_k=16, min_blocks=1, cp_async=True, stages=3),  # ... and half the barriers
    # 8x16 per thread with 4 warps, 2 CTAs/SM: one CTA's barrier is covered by the other's FFMA
    SgemmConfig(warps_m=4, warps_n=1, min_blocks=2),
    SgemmConfig(warps_m=4, warps_n=1, min_blocks=2, cp_async=True, stages=3),  # ... with cp.async
    # the 8x16 tiles at ptxas -O1, which keeps the FFMAs' serpentine order and their operands' banks
    # (module docstring): 0.86-0.92x cuBLAS at 4096^3 / 8192^3 against 0.78-0.88x for the same tilings at -O3 ...
    SgemmConfig(blk_n=256, min_blocks=1, cp_async=True, stages=4, opt_level=1),
    # ... and with a compiler barrier between each k-step's fragment loads and its FFMAs, which -O1 then
    # issues a whole k-step ahead of their use: 0.99-1.02x
    SgemmConfig(blk_n=256, min_blocks=1, cp_async=True, stages=4, opt_level=1, fence=True),
    SgemmConfig(blk_n=256, min_blocks=1, cp_async=True, stages=3, opt_level=1, fence=True),
    SgemmConfig(blk_n=256, blk_k=16, min_blocks=1, cp_async=True, stages=3, opt_level=1, fence=True),
    SgemmConfig(warps_m=4, warps_n=1, min_blocks=2, cp_async=True, stages=3, opt_level=1, fence=True),
    SgemmConfig(lanes_m=8, lanes_n=4, warps_m=2, warps_n=2, min_blocks=2, cp_async=True, stages=3, opt_level=1,
                fence=True),
    # 32-row tiles for M <= 32 (4x8 per thread; THIN): a 64-row tile computes twice the rows there. 32 x 16 is the
    # least A tile whose 128-bit vectors give each of 128 threads one
    SgemmConfig(blk_m=32, blk_n=128, blk_k=16, warps_m=2, warps_n=2, min_blocks=4),
    SgemmConfig(blk_m=32, blk_n=128, blk_k=16, warps_m=2, warps_n=2, min_blocks=4, cp_async=True, stages=3),
)}
#: sgemm_tuned's and tc.gemm's (IEEE fp32) tiling: 128x256x8, 8x16 per thread, one CTA of 256 threads per SM,
#: cp.async into 4 stages, ptxas -O1 with the k-step fence. 1.01x cuBLAS at 4096^3 and 1.02x at 8192^3 with the
#: contenders timed in turn, 1.01x in 3-second runs at the 700 W limit, where 8x8 tilings lose ~3% of their clock
#: (H100, nineteenth session). The 8x8 tile 128x128x16 (0.99x / 0.95-1.00x, 2 CTAs per SM) was the default before.
DEFAULT = CONFIGS["128x256x8_w4x8_t256_b1_a4_O1_f"]
#: sgemm_tuned's tiling where DEFAULT's unpredicated kernel does not apply (M not a multiple of 128, N of 256,
#: K of 8, or operands not laid out for 128-bit accesses): the 8x8 tile takes N multiples of 128 whole, and
#: its predicated trace has twice the CTAs of DEFAULT's. H100, nineteenth session, x cuBLAS: 4096x4224x4096
#: 0.991 against DEFAULT's predicated 0.646, 2000x3000x4000 0.812 against 0.648, 4000^3 0.748 against 0.796.
FALLBACK = CONFIGS["128x128x16_w4x8_t256_b2"]


def _copy_partition(x: Tensor, contiguous: int, threads: int) -> Tensor:
    """Thread threadIdx.x's part of a (BLK_MN, BLK_K, ...) tile in a global->smem copy: runs of VEC
    elements along the mode `contiguous` (0 or 1), threads arranged contiguous-mode-first, so a warp's
    128-bit accesses are adjacent. Result: (VEC, REPS, ...) with the run first (what copy vectorizes)."""
    rest = tuple(range(2, x.rank))
    view = permute_modes(x, contiguous, 1 - contiguous, *rest)               # (C, O, ...)
    c, o = tc.size(view, 0), tc.size(view, 1)
    thr = tc.make_layout((c // VEC, threads // (c // VEC)))                  # (THR_C, THR_O) -> thread
    assume(o % tc.size(thr, 1) == 0, "the other mode must split evenly among the threads")
    perm = (vector_permutation(c // VEC, c),) + (None,) * (view.rank - 1)
    return tc.local_partition(tc.composition(view, perm), thr, threadIdx.x)  # (VEC, REPS, ...)


def _scalar_partition(x: Tensor, contiguous: int, threads: int) -> Tensor:
    """Thread threadIdx.x's part of a (BLK_MN, BLK_K, ...) tile in the 4-byte cp.async copy of a K-major
    operand: single elements, ASYNC_LANES_K threads along the global contiguous mode (k) and the rest
    along the other, so a warp reads whole 32-byte sectors of 4 rows and, with smem m-contiguous and
    k-rows padded by 4 floats, writes 32 distinct banks. Result: (K_VALS, MN_VALS, ...)."""
    rest = tuple(range(2, x.rank))
    view = permute_modes(x, contiguous, 1 - contiguous, *rest)               # (C, O, ...)
    lanes_c = imin(tc.size(view, 0), ASYNC_LANES_K)
    thr = tc.make_layout((lanes_c, threads // lanes_c))                      # (THR_C, THR_O) -> thread
    return tc.local_partition(view, thr, threadIdx.x)                        # (C_VALS, O_VALS, ...)


def _async_copy(x: Tensor, contiguous: int, threads: int) -> tuple[Any, Any]:
    """(cp.async atom, partition) of a (BLK_MN, BLK_K, ...) global or smem tile for the cp.async copies:
    an m/n-contiguous operand moves 16 bytes at a time with the _copy_partition runs (L2 only: each
    byte is read once per CTA), a K-major operand one float at a time (_scalar_partition), the only way
    an asynchronous copy can transpose it into the m/n-contiguous smem the LDS.128 fragments need."""
    if contiguous == 0:
        return cp_async(16, 32, cache="global"), _copy_partition(x, 0, threads)
    return cp_async(4), _scalar_partition(x, 1, threads)


def _contiguous_mode(x: Tensor) -> int:
    """0 or 1: the mode of a 2-D global tensor with the static unit stride (1, K-major, when neither)."""
    return 0 if x.stride[0] == 1 and isinstance(x.stride[0], int) else 1


@dsl.kernel
def sgemm_tuned_kernel(A, B, C, alpha, beta, cfg: Constexpr, full: Constexpr, splits: Constexpr = 1):
    """C (M,N) = alpha * A (M,K) @ B^T + beta * C with B given as (N,K); see the module docstring.

    ``splits`` > 1 (split-K): C is the fp32 workspace (SPLITS,M,N), blockIdx.z the split, which takes its share
    of the k-tiles (ceil(k-tiles / SPLITS) each; the host makes sure none is empty) and stores alpha times its
    partial sum into C(z) (the host passes alpha 1, beta 0; ``splitk_reduce_kernel`` adds the splits up)."""
    # the predicated trace keeps ~10 more values live than the 128 registers of 2 CTAs/SM allow (ptxas
    # would spill them inside the main loop), so it asks for 1 CTA/SM's budget instead
    dsl.launch_bounds(cfg.threads, cfg.min_blocks if full else 1)        # __launch_bounds__(THREADS, MIN_BLOCKS)
    if cfg.opt_level != 3:
        dsl.ptxas_options(f"-O{cfg.opt_level}")
    bM, bN, bK = cfg.blk_m, cfg.blk_n, cfg.blk_k
    cta_tiler = (bM, bN, bK)                                              # (BLK_M, BLK_N, BLK_K)
    M, K = A.shape
    N = B.shape[0]
    if splits > 1:
        C = C(blockIdx.z, _, _)                                           # (M,N) this split's partial sums

    #
    # CTA tiles
    #
    if cfg.raster > 1:
        # consecutive CTAs: `raster` neighbouring n-tiles of one m-tile, then the next m-tile
        raster = tc.make_layout((cfg.raster, tc.ceil_div(M, bM), tc.ceil_div(N, bN) // cfg.raster))
        n_lo, m_tile, n_hi = tc.idx2crd(blockIdx.x, raster.shape)        # (r, m, n/r)
        cta_coord = (m_tile, n_lo + cfg.raster * n_hi, _)                  # (m,n,k)
    else:
        cta_coord = (blockIdx.x, blockIdx.y, _)                           # (m,n,k)
    gA = tc.local_tile(A, cta_tiler, cta_coord, (1, None, 1))             # (BLK_M,BLK_K,k)
    gB = tc.local_tile(B, cta_tiler, cta_coord, (None, 1, 1))             # (BLK_N,BLK_K,k)
    gC = tc.local_tile(C, cta_tiler, cta_coord, (1, 1, None))             # (BLK_M,BLK_N)

    # S smem stages per operand (2 unless cp.async), m (n) contiguous, k-rows padded so transposing stores
    # miss each other
    S = cfg.smem_stages(full)
    use_async = cfg.cp_async and full
    sA = dsl.smem_tensor(dsl.float32, tc.make_layout((bM, bK, S), (1, bM + cfg.pad, bK * (bM + cfg.pad))))  # (BLK_M,BLK_K,S)
    sB = dsl.smem_tensor(dsl.float32, tc.make_layout((bN, bK, S), (1, bN + cfg.pad, bK * (bN + cfg.pad))))  # (BLK_N,BLK_K,S)

    a_c, b_c = _contiguous_mode(A), _contiguous_mode(B)
    if use_async:
        #
        # Global -> smem copies with cp.async: no registers in between, the K-major operand one float at a time
        #
        atom_A, tAgA = _async_copy(gA, a_c, cfg.threads)                  # (CPY,CPY_REPS,k)
        tAsA = _async_copy(sA, a_c, cfg.threads)[1]                     # (CPY,CPY_REPS,S)
        atom_B, tBgB = _async_copy(gB, b_c, cfg.threads)                  # (CPY,CPY_REPS,k)
        tBsB = _async_copy(sB, b_c, cfg.threads)[1]                     # (CPY,CPY_REPS,S)
    else:
        #
        # Global -> register -> smem copies: 128-bit runs along each operand's contiguous mode
        #
        tAgA = _copy_partition(gA, a_c, cfg.threads)                      # (VEC,REPS,k)
        tAsA = _copy_partition(sA, a_c, cfg.threads)                      # (VEC,REPS,2)
        tBgB = _copy_partition(gB, b_c, cfg.threads)                      # (VEC,REPS,k)
        tBsB = _copy_partition(sB, b_c, cfg.threads)                      # (VEC,REPS,2)
        tArA = tc.make_fragment_like(tAsA(_, _, 0))                       # (VEC,REPS) prefetch registers
        tBrB = tc.make_fragment_like(tBsB(_, _, 0))                       # (VEC,REPS) prefetch registers
    if not full:
        # Predicates: the same partitions of identity tensors give each element's (m,k) / (n,k)
        cA = tc.local_tile(tc.make_identity_tensor((M, K)), cta_tiler, cta_coord, (1, None, 1))  # (BLK_M,BLK_K,k)
        cB = tc.local_tile(tc.make_identity_tensor((N, K)), cta_tiler, cta_coord, (None, 1, 1))  # (BLK_N,BLK_K,k)
        tAcA = _copy_partition(cA, a_c, cfg.threads)                      # (VEC,REPS,k) -> (m,k)
        tBcB = _copy_partition(cB, b_c, cfg.threads)                      # (VEC,REPS,k) -> (n,k)

    def load_tile(k_tile: Any) -> None:
        """Global k-tile -> prefetch registers (zeros outside A and B when not full)."""
        if full:
            dsl.copy(tAgA(_, _, k_tile), tArA)
            dsl.copy(tBgB(_, _, k_tile), tBrB)
        else:
            dsl.copy_if(dsl.elem_less(tAcA(_, _, k_tile), (M, K)), tAgA(_, _, k_tile), tArA, zfill=True)
            dsl.copy_if(dsl.elem_less(tBcB(_, _, k_tile), (N, K)), tBgB(_, _, k_tile), tBrB, zfill=True)

    def load_tile_async(k_tile: Any, stage: Any) -> None:
        """Global k-tile -> smem stage with cp.async, as one group (the unpredicated kernel only)."""
        dsl.copy(atom_A, tAgA(_, _, k_tile), tAsA(_, _, stage))
        dsl.copy(atom_B, tBgB(_, _, k_tile), tBsB(_, _, stage))
        dsl.cp_async_commit()

    #
    # Thread partitions of the FFMA core: 4x4 groups, contiguous in smem, so fragments load as LDS.128
    #
    tC = tc.make_layout(((cfg.lanes_m, cfg.warps_m), (cfg.lanes_n, cfg.warps_n)),
                        ((1, 32), (cfg.lanes_m, 32 * cfg.warps_m)))      # (THR_M,THR_N) -> thread: lanes, then warps
    perm_m = vector_permutation(cfg.thr_m, bM)                            # (THR_M,VEC,REP_M) -> m
    perm_n = vector_permutation(cfg.thr_n, bN)                            # (THR_N,VEC,REP_N) -> n
    tCsA = tc.local_partition(tc.composition(sA, (perm_m, None, None)), tC, threadIdx.x, (1, None))  # (THR_M_VALS,BLK_K,S)
    tCsB = tc.local_partition(tc.composition(sB, (perm_n, None, None)), tC, threadIdx.x, (None, 1))  # (THR_N_VALS,BLK_K,S)
    tCgC = tc.local_partition(tc.composition(gC, (perm_m, perm_n)), tC, threadIdx.x)                # (THR_M_VALS,THR_N_VALS)
    vals_m, vals_n = tc.size(tCsA, 0), tc.size(tCsB, 0)
    tCrA = dsl.make_rmem_tensor(dsl.float32, (vals_m, 2))                 # (THR_M_VALS,2) double-buffered fragment
    tCrB = dsl.make_rmem_tensor(dsl.float32, (vals_n, 2))                 # (THR_N_VALS,2) double-buffered fragment
    # accumulators ordered like C's contiguous mode, so the epilogue stores 128 bits at a time
    c_c = _contiguous_mode(C)
    tCrC = dsl.make_rmem_tensor(dsl.float32, tc.make_layout((vals_m, vals_n), tc.LayoutLeft if c_c == 0 else tc.LayoutRight))  # (THR_M_VALS,THR_N_VALS)
    dsl.clear(tCrC)

    def load_fragments(k: int, this: tuple[Tensor, Tensor], following: tuple[Tensor, Tensor]) -> None:
        """Fragments of step k+1 into the idle register buffer: k-block k+1 of this k-tile's stages (A, B), or
        k-block 0 of the following k-tile's after the last step."""
        sA_k, sB_k = (this[0](_, k + 1), this[1](_, k + 1)) if k + 1 < bK else (following[0](_, 0), following[1](_, 0))
        dsl.copy(sA_k, tCrA(_, (k + 1) % 2))
        dsl.copy(sB_k, tCrB(_, (k + 1) % 2))

    def compute(k: int) -> None:
        """Step k's FFMAs, (THR_M_VALS,THR_N_VALS) += outer product, behind the k-step fence with ``fence`` (the
        fragment loads before it stay ahead)."""
        if cfg.fence:
            dsl.compiler_barrier()
        dsl.gemm(tCrA(_, k % 2), tCrB(_, k % 2), tCrC)

    #
    # Main loop: compute on stage k_tile % S while the next k-tiles travel global -> (registers ->) smem
    # (k_tile counts this CTA's k-tiles, those of its split with split-K: global k-tile k_begin + k_tile)
    #
    k_tile_max = K // bK if full else tc.ceil_div(K, bK)
    k_begin = 0
    if splits > 1:
        per_split = tc.ceil_div(k_tile_max, splits)
        k_begin = blockIdx.z * per_split                                  # the split's first k-tile
        k_tile_max = imin(per_split, k_tile_max - k_begin)                # its k-tiles (>= 1: the host's split)
    if use_async:
        # Prologue: k-tiles 0 .. S-2 in flight, one cp.async group each, then wait for k-tile 0
        for s in range(S - 1):
            load_tile_async(k_begin + imin(s, k_tile_max - 1), s)
        dsl.cp_async_wait(S - 2)
        dsl.syncthreads()
        dsl.copy(tCsA(_, 0, 0), tCrA(_, 0))                               # first fragments
        dsl.copy(tCsB(_, 0, 0), tCrB(_, 0))
        for k_tile in dsl.range(k_tile_max):
            read = k_tile % S                                             # the stage holding this k-tile
            tCsA_read, tCsB_read = tCsA(_, _, read), tCsB(_, _, read)     # (THR_VALS,BLK_K) pointers, as below
            tCsA_next, tCsB_next = tCsA(_, _, (k_tile + 1) % S), tCsB(_, _, (k_tile + 1) % S)
            for k in range(bK):
                if k == bK - 1:
                    # k-tile + 1 has landed (this thread's copies: at most S-2 younger groups are in
                    # flight), and after the barrier everyone's copies are visible
                    dsl.cp_async_wait(S - 2)
                    dsl.syncthreads()
                load_fragments(k, (tCsA_read, tCsB_read), (tCsA_next, tCsB_next))
                if k == 0:
                    # k-tile + S-1 into the stage of k-tile - 1, which every thread finished reading
                    # before the previous k-tile's barrier; past the end the last k-tile is fetched
                    # again into a stage nobody reads any more (no branch in the loop)
                    load_tile_async(k_begin + imin(k_tile + S - 1, k_tile_max - 1), (k_tile + S - 1) % S)
                compute(k)
        dsl.cp_async_wait(0)                                              # nothing lands in smem after the loop
    else:
        load_tile(k_begin)                                                # prologue: k-tile 0 -> stage 0
        dsl.copy(tArA, tAsA(_, _, 0))
        dsl.copy(tBrB, tBsB(_, _, 0))
        dsl.syncthreads()
        dsl.copy(tCsA(_, 0, 0), tCrA(_, 0))                                   # first fragments
        dsl.copy(tCsB(_, 0, 0), tCrB(_, 0))
        for k_tile in dsl.range(k_tile_max):
            read = k_tile % 2                                                 # the stage holding this k-tile
            write = 1 - read                                                  # the stage the next k-tile goes to
            # this k-tile's stages as pointer variables (kernel locals), so every fragment load is pointer +
            # constant: with `read * STAGE + offset` inline, NVRTC 13.0 rebuilt one operand's address at
            # each LDS.128 (an IADD3 and a LEA: 1206 instructions per 1024 FFMA instead of 1147)
            tCsA_read, tCsB_read = tCsA(_, _, read), tCsB(_, _, read)         # (THR_VALS,BLK_K)
            tCsA_write, tCsB_write = tCsA(_, _, write), tCsB(_, _, write)     # (THR_VALS,BLK_K)
            for k in range(bK):
                if k == bK - 1:
                    # every thread is past its last read of stage `write` (the barrier of the previous k-tile)
                    dsl.copy(tArA, tAsA(_, _, write))
                    dsl.copy(tBrB, tBsB(_, _, write))
                    dsl.syncthreads()
                load_fragments(k, (tCsA_read, tCsB_read), (tCsA_write, tCsB_write))
                if k == 0:
                    # the last k-tile reloads itself (a wasted load, but no branch in the loop)
                    load_tile(k_begin + imin(k_tile + 1, k_tile_max - 1))
                compute(k)

    #
    # Epilogue
    #
    if full:
        tCrD = dsl.make_rmem_tensor(dsl.float32, tCrC.layout)             # (THR_M_VALS,THR_N_VALS) C, ordered like tCrC
        order = (0, 1) if c_c == 0 else (1, 0)                           # C's contiguous mode first: 128-bit stores
        with dsl.if_(dsl.eq(beta, 0.0)):
            dsl.axpby(alpha, tCrC, 0, tCrC)                              # C is not read (it may hold NaN)
            dsl.copy(permute_modes(tCrC, *order), permute_modes(tCgC, *order))
        with dsl.else_():
            dsl.copy(permute_modes(tCgC, *order), permute_modes(tCrD, *order))
            dsl.axpby(alpha, tCrC, beta, tCrD)
            dsl.copy(permute_modes(tCrD, *order), permute_modes(tCgC, *order))
    else:
        cC = tc.local_tile(tc.make_identity_tensor((M, N)), cta_tiler, cta_coord, (1, 1, None))  # (BLK_M,BLK_N)
        tCcC = tc.local_partition(tc.composition(cC, (perm_m, perm_n)), tC, threadIdx.x)        # (THR_M_VALS,THR_N_VALS) -> (m,n)
        dsl.axpby(alpha, tCrC, beta, tCgC, pred=dsl.elem_less(tCcC, (M, N)))  # C = alpha A B + beta C inside (M,N)


# ----------------------------------------------------------------------------- host side

def _aligned_for_vectors(x: Any) -> bool:
    """x (2-D) has a unit-stride mode, a 16-byte aligned data pointer and an other stride that is a
    multiple of 4 floats: every 4-float run the kernel reads or writes is one 128-bit access."""
    s = x.stride()
    unit = [i for i in (0, 1) if s[i] == 1 or x.shape[i] == 1]
    if not unit:
        return False
    other = s[1 - unit[0]] if x.shape[1 - unit[0]] > 1 else 0
    return x.data_ptr() % 16 == 0 and other % VEC == 0


def is_full(A: Any, Bt: Any, C: Any, cfg: SgemmConfig) -> bool:
    """True when the unpredicated kernel applies: M, N, K multiples of the CTA tile and every operand
    laid out for 128-bit accesses (see _aligned_for_vectors). Bt is B as (N,K)."""
    (M, K), N = A.shape, Bt.shape[0]
    if M % cfg.blk_m or N % cfg.blk_n or K % cfg.blk_k or K == 0:
        return False
    return all(_aligned_for_vectors(x) for x in (A, Bt, C))


#: sgemm_tuned's tiling where DEFAULT or FALLBACK would leave SMs without a CTA: 64x128, 128 threads, 4 CTAs per
#: SM. H100, x cuBLAS (thirty-eighth session, probe_sgemm.py): 256³ 0.53 against 0.22 for DEFAULT, 512³ 0.47 against
#: 0.19, 1024³ 0.88 against 0.34, 1536³ 0.90 against 0.75, 1000³ 0.53 against 0.44 (FALLBACK); at 2048³ (128
#: tiles of DEFAULT) 0.93 against 1.02, so DEFAULT keeps it.
SMALL = CONFIGS["64x128x8_w4x8_t128_b4"]


#: sgemm_tuned's tiling for M <= 32, and where SMALL's 64-row tiles would compute more rows than 32-row ones
#: (M = 65..96, 129..160, ...): 32x128x16, 4x8 per thread, 128 threads, 4 CTAs per SM. H100, x cuBLAS (forty-first
#: session, probe_sgemm.py, B N- / K-contiguous, both with the picked splits): 32x4096x4096 1.16 / 1.03 against
#: SMALL's 0.64 / 0.56, 32x11008x4096 1.50 / 1.29 against 0.54 / 0.54, 32x4096x11008 1.01 / 1.08 against 0.55 / 0.58,
#: 20x4096x4096 0.91 / 0.81 against 0.68 / 0.58, 24x4096x11008 0.76 / 0.84 against 0.55 / 0.58, 17x1000x1000 0.92 /
#: 1.10 against 0.82 / 1.01, 28x777x2001 1.08 / 1.01 against 0.91 / 0.89; 80x4096x4096 0.76 / 0.68 against 0.69 /
#: 0.58, 96x6144x2048 0.91 / 0.94 against 0.75 / 0.66, 160x4096x4096 0.98 / 0.88 against 0.79 / 0.61. Where both
#: compute the same rows SMALL's 8x8 per thread is faster: 48x4096x4096 0.68 / 0.65 against 0.77 / 0.71, 64x4096x4096
#: 0.90 / 0.93 against 1.01 / 1.07, 40x11008x4096 0.57 / 0.49 against 0.53 / 0.52.
THIN = CONFIGS["32x128x16_w4x8_t128_b4"]


def pick_sgemm_config(A: Any, B: Any, C: Any, sms: int | None = None) -> SgemmConfig:
    """The tiling sgemm_tuned uses for C = A @ B (A (M,K), B (K,N), C (M,N)) on a GPU of `sms` SMs (None: A's
    device, 132 off a GPU): THIN for M <= 32 rows; else DEFAULT when its unpredicated kernel applies, else
    FALLBACK; where that tiling's CTAs would not reach 3/4 of the SMs, SMALL, or THIN where its 32-row tiles
    compute fewer rows than SMALL's 64-row ones."""
    M, N = C.shape
    if M <= THIN.blk_m:
        return THIN
    cfg = DEFAULT if is_full(A, B.t(), C, DEFAULT) else FALLBACK
    if sms is None:
        from tilecraft.gemm.op import _device_facts
        sms = _device_facts(A.device)[0] if A.is_cuda else 132
    if 4 * -(-M // cfg.blk_m) * -(-N // cfg.blk_n) >= 3 * sms:
        return cfg
    rows = {t: -(-M // t.blk_m) * t.blk_m for t in (SMALL, THIN)}
    return THIN if rows[THIN] < rows[SMALL] else SMALL


#: split-K (sgemm_tuned's ``splits``): at most this many splits (the most measured), each of at least SPLIT_MIN_K
#: elements of K
MAX_SPLITS = 128
SPLIT_MIN_K = 64


def pick_sgemm_splits(M: int, N: int, K: int, cfg: SgemmConfig, sms: int, full: bool = True) -> int:
    """Split-K for sgemm_tuned where the tiling's CTAs leave SMs' CTA slots empty: about as many CTAs as slots,
    round(slots / tiles) splits (slots: ``min_blocks`` CTAs per SM for the unpredicated trace, one fewer for the
    predicated one, whose registers do not fit the launch bound's budget), at most MAX_SPLITS and each of at
    least SPLIT_MIN_K elements of K. H100, x cuBLAS, without / with the picked splits (thirty-ninth session,
    probe_sgemm.py, two runs): 64x8192x8192 0.26 / 0.94 (8), 128x4096x4096 0.27 / 0.90 (8), 512x512x65536 0.12 /
    0.93 (16), 1x4096x4096 0.07 / 0.42 (12), 96x6144x2048 0.42 / 0.74 (4), 256³ 0.53 / 0.92 (4), 512³ 0.47 / 0.98
    (8), 768³ 0.74 / 1.12 (7), 1000³ 0.53 / 0.63 (3), 1024³ 0.86 / 0.96 (4), 1280³ 0.98 / 1.08 (3), 1536³ 0.90 /
    0.96 (2), 2000x500x3000 0.49 / 0.74 (3). Best of the fixed counts tried, where the pick missed it: 256³ 1.06
    (8), 1536³ 1.06 (4). More splits than slots lose: their partial sums cost more than the K they cut (1024³
    0.62 in 16 splits). Where the tiles are few, the cap was 16 splits until the forty-first session; x cuBLAS with
    16 / 32 / 64 / 128 splits (B N- or K-contiguous): 64x1024x32768 0.52 / 0.88 / 1.01 / 0.91, 64x256x65536
    0.16 / 0.31 / 0.56 / 0.87, 128x128x100000 (K) 0.20 / 0.41 / 0.75 / 1.12, 32x128x65536 0.22 / 0.42 / 0.75
    / 1.18, 24x1024x8192 0.75 / 0.90 / 0.91 / 0.73, 17x512x16384 (K) 0.56 / 0.93 / 1.10 / 1.14,
    256x512x8192 0.92 / 0.96 / 0.82 / 0.61, 128x1024x16384 0.82 / 0.92 / 0.84 / 0.70: the best is the
    count nearest round(slots / tiles) every time."""
    tiles = -(-M // cfg.blk_m) * -(-N // cfg.blk_n)
    slots = sms * (cfg.min_blocks if full else max(1, cfg.min_blocks - 1))
    want = min(round(slots / tiles), K // SPLIT_MIN_K, MAX_SPLITS)
    return whole_splits(-(-K // cfg.blk_k), want) if want > 1 else 1


def sgemm_tuned_args(A: Any, B: Any, C: Any, alpha: float, beta: float,
                     cfg: SgemmConfig = DEFAULT, splits: int = 1) -> tuple[tuple, tuple, tuple]:
    """(args, grid, block) to launch sgemm_tuned_kernel for C = alpha * A @ B + beta * C, with A (M,K),
    B (K,N), C (M,N) torch tensors of any strides. The rasterized grid is used only when the n-tiles
    split into whole groups (else the 2-D grid). With ``splits`` > 1 (split-K), C is the fp32 workspace
    (splits, M, N), contiguous, the grid's third extent the splits, and the kernel stores alpha times each
    split's partial sum (beta is not used); ``splits`` must be ``whole_splits`` of the k-tiles."""
    import numpy as np

    cfg.validate()
    Bt = B.t()  # the kernel takes B as (N,K)
    M, N = C.shape[-2:]
    if splits > 1:
        k_tiles = -(-A.shape[1] // cfg.blk_k)
        if C.dim() != 3 or C.shape[0] != splits or not C.is_contiguous():
            raise ValueError(f"split-K writes a contiguous ({splits}, {M}, {N}) workspace, got {tuple(C.shape)}")
        if whole_splits(k_tiles, splits) != splits:
            raise ValueError(f"{k_tiles} k-tiles do not make {splits} splits (whole_splits: "
                             f"{whole_splits(k_tiles, splits)})")
    tiles_m, tiles_n = -(-M // cfg.blk_m), -(-N // cfg.blk_n)
    if cfg.raster > 1 and tiles_n % cfg.raster:
        cfg = replace(cfg, raster=1)
    full = is_full(A, Bt, C[0] if splits > 1 else C, cfg)
    grid = (tiles_m * tiles_n,) if cfg.raster > 1 else (tiles_m, tiles_n)
    args = (A, Bt, C, np.float32(alpha), np.float32(beta), cfg, full)
    if splits > 1:
        return args + (splits,), grid + (1,) * (2 - len(grid)) + (splits,), (cfg.threads,)
    return args, grid, (cfg.threads,)


def sgemm_tuned(A: Any, B: Any, C: Any = None, alpha: float = 1.0, beta: float = 0.0,
                config: SgemmConfig | None = None, splits: int | None = None) -> Any:
    """C = alpha * A @ B + beta * C with the tuned SIMT kernel; returns C (new when C is None).

    A (M,K), B (K,N) and C (M,N) are float32 CUDA tensors on one device with any strides. Shapes that
    are multiples of the CTA tile with 128-bit-ready layouts run the unpredicated kernel, all others
    its predicated trace (see the module docstring). ``config`` None picks the tiling (pick_sgemm_config:
    DEFAULT, FALLBACK, SMALL or THIN). ``splits`` > 1 is split-K: each split sums its share of K into an fp32
    workspace and a second kernel (tensorop's ``SplitReduce``) adds the shares up into C; None
    picks (``pick_sgemm_splits``: where the tiles leave SMs idle and K is long), 1 is none. As in BLAS, C is
    not read when beta is 0. Raises TypeError/ValueError on wrong dtypes, devices, ranks, shapes, overlapping
    outputs or a split count below 1.

    The checks, the pick and the launches are resolved once per call signature (dtypes, shapes, strides, 16-byte
    alignment and devices of A, B and C, config, splits, whether alpha is 1 and beta 0; ``tc.gemm.clear_plans()``
    forgets them): a repeated call costs the allocations and the launches.
    """
    return sgemm_plan(A, B, C, alpha, beta, config, splits).run(A, B, C, alpha, beta)


def sgemm_plan(A: Any, B: Any, C: Any = None, alpha: float = 1.0, beta: float = 0.0,
               config: SgemmConfig | None = None, splits: int | None = None) -> _SgemmPlan:
    """sgemm_tuned's resolved call for this signature (see sgemm_tuned), made once: ``.run(A, B, C, alpha, beta)``
    runs calls of it (tc.gemm keeps it for its own signature's calls)."""
    from tilecraft.gemm.op import _memo, _signature

    key = (_signature(A), _signature(B), _signature(C), config, splits, alpha == 1, beta == 0)
    return _memo(_PLANS, key, lambda: _SgemmPlan(A, B, C, alpha, beta, config, splits))


#: sgemm_tuned's resolved calls, by signature (see sgemm_tuned)
_PLANS: dict[Any, Any] = {}


class _SgemmPlan:
    """One signature's call of sgemm_tuned, checked and picked once: the output's shape, the main kernel's bound
    launch and its Constexpr arguments (None when M or N is 0), with split-K the partials' shape and the bound
    reduction (``SplitReduce``; else None), and whether the reduction reads C (beta not 0)."""

    def __init__(self, A: Any, B: Any, C: Any, alpha: float, beta: float, config: SgemmConfig | None,
                 splits: int | None):
        import numpy as np
        import torch

        from tilecraft.gemm.simt import check_sgemm_operands

        M, N, K, C, beta = check_sgemm_operands(A, B, C, beta, "sgemm_tuned")
        if splits is not None and (isinstance(splits, bool) or not isinstance(splits, int) or splits < 1):
            raise ValueError(f"sgemm_tuned: splits must be an int >= 1, got {splits!r}")
        self.shape, self.launch, self.reduce, self.partials, self.read_c = (M, N), None, None, None, beta != 0
        self.device, self.f32 = A.device, torch.float32
        if M == 0 or N == 0:
            return
        cfg = config or pick_sgemm_config(A, B, C)
        if splits is None:
            from tilecraft.gemm.op import _device_facts
            splits = pick_sgemm_splits(M, N, K, cfg, _device_facts(A.device)[0], is_full(A, B.t(), C, cfg))
        splits = whole_splits(-(-K // cfg.blk_k), splits)
        if splits == 1:
            args, grid, block = sgemm_tuned_args(A, B, C, alpha, beta, cfg)
        else:
            from tilecraft.gemm.tensorop import EpilogueSpec, SplitReduce

            self.partials = (splits, M, N)
            W = torch.empty(self.partials, dtype=torch.float32, device=A.device)
            args, grid, block = sgemm_tuned_args(A, B, W, 1.0, 0.0, cfg, splits)
            W4, D3 = W.unsqueeze(1), C.unsqueeze(0)
            C3 = D3 if self.read_c else None
            a, b = np.float32(alpha), np.float32(beta)
            self.reduce = SplitReduce(W4, C3, D3, None, a, b, EpilogueSpec(read_c=self.read_c, unit_alpha=alpha == 1))
        self.constants = args[5:]                                         # cfg, full (, splits)
        self.launch = sgemm_tuned_kernel.bind(*args, grid=grid, block=block)

    def run(self, A: Any, B: Any, C: Any, alpha: float, beta: float) -> Any:
        """C = alpha * A @ B + beta * C for operands of this plan's signature; a new C when C is None. The bound
        launches read only the tensors' addresses, so B goes as it is (the kernel's (N,K) view of it has its
        address), and so do the partials and C to the reduction (its (S,1,M,N) and (1,M,N) views)."""
        import torch

        if C is None:
            C, beta = torch.empty(self.shape, dtype=self.f32, device=self.device), 0.0
        if self.launch is None:
            return C
        if self.reduce is None:
            self.launch(A, B, C, float(alpha), float(beta), *self.constants)
            return C
        W = torch.empty(self.partials, dtype=self.f32, device=self.device)
        self.launch(A, B, W, 1.0, 0.0, *self.constants)
        self.reduce(W, C if self.read_c else None, C, None, float(alpha), float(beta))
        return C
