"""The mixed-input GEMM for small M (decoding): y (M, N) = x (M, K) @ dequantize(W) (+ bias), x and y in
fp16 or bf16, W int4 or int8 packed by ``tilecraft.quant.pack`` (layout v1), fp32 accumulation.

At M <= 16 the time is the time to stream W from HBM once; everything here serves that.

* **Tensor cores, the weight as the A operand.** ``mma.sync m16n8k16`` computes y^T = W^T x^T: A is a
  16 (n) x 16 (k) weight tile, B is x^T (16 k x 8 m, M padded to 8 with a clamped row that is never
  stored), C the fp32 16 x 8 tile. SIMT for M <= 4 would need 2 FMA per weight per row of x plus the
  same conversion work, ~4x the issue slots of one HMMA per 256 weights; the mma path keeps every
  M <= 8 the same cost and M = 16 one extra HMMA per conversion, so one kernel serves M = 1..32 (larger M in slices of 32).
* **Lane-private weights.** Each weight is read by exactly one lane: the packed layout is fragment
  ordered (quant/pack.py), so lane t's 16-byte load *is* its A operands for 4 (int4) or 2 (int8)
  k-blocks of one tile, and a warp's load instruction reads 512 contiguous bytes; no lane needs
  another's weights, so no barrier ever guards them.
* **Bytes in flight.** A warp owns ``tiles`` 16-row tiles and walks its k-chunks (``chunk`` k values
  each) through ``stages`` buffers: chunks j+1 .. are in flight while chunk j is converted and
  multiplied. The buffers are either registers (``LDG.128`` straight into the operands; ``prefetch``
  chunks further ahead are asked of L2 with ``prefetch.global.L2``, no register held), or, with
  ``async_copy`` (the decoding default, M <= 8), per-lane slots in shared memory filled by ``cp.async``
  together with the chunk's rows of x (or, ``x_regs``, the weights alone, x's fragments loaded into
  registers a chunk ahead: M = 17..32, where 32 rows of x filled most of a stage), so the bytes in flight
  cost no registers and the warps that fit an SM grow: W4 g128 at M = 1, N = K = 8192 on an H100 runs
  17.0 us against 19.0 with three register buffers and L2 prefetch.
* **In-register conversion** (include/tilecraft/mixed.cuh): magic-number int4/int8 -> fp16/bf16
  producing q - z exactly (z: the zero point, or 8 / 128 for symmetric weights stored unsigned).
  Scales are applied to fp32 accumulators: per group, the k-blocks of a group accumulate into a
  temporary fragment that is added to the tile's accumulators times the two rows' scales (4 FFMA per
  lane per group and tile), or, per-channel, once at the end. The tensor cores thus multiply exact
  integers by x, and the result is as accurate as a float64 reference allows fp32 sums to be.
* **k permutation.** A GEMM may permute k as long as A and B agree: slot s of a 16-k block holds
  k = 4q + 2 (s >= 8) + s % 2, so lane (g, q)'s B operand is x[g, 4q .. 4q+3], one 8-byte load.
* **Split-K.** Where N / (16 tiles) row blocks are too few CTAs for the SMs, grid.y = S slices of K fill the
  machine: the fewest S that put a CTA on nine SMs in ten, within one wave (``_pick_splits``). Within a CTA,
  the warps take the slice's chunks round-robin, or (``MixedConfig.runs``) each a contiguous run of them; N =
  K = 8192, PDL stream, runs against round-robin: W8A16 per-channel at M = 16 25.5 against 26.3 us on an
  H100 (even on an H200) in chunks of 128, so its pick takes runs (in chunks of 64 only with one tile); W4A16
  g128 at M = 8 12.6 against 11.7 on an H200 (even on an H100), at M = 1 13.05 against 13.30 on an H100 but
  11.8 against 11.7 on an H200. The warps meet in shared memory at the end (``MixedConfig.reuse``: in the
  weights' stages, which frees the CTA's own room for it where that lets one more CTA share an SM). With S > 1,
  each CTA adds its partial (already scaled) to an fp32 workspace with ``red.add`` and counts itself in (one
  gpu-scope acq_rel atomic per CTA after a barrier, not a fence per thread); the last CTA of a row block writes y
  (+ bias) and zeroes the workspace and counter for the next launch: one kernel, no memset. The order of the fp32
  additions varies from run to run (results differ in the last bits).

The same kernel reads a dense 16-bit weight in place (``DenseFormat``; tilecraft/gemm/skinny.py, decoding with
unquantized weights): no conversion or scales, lanes' 16-byte loads of W^T's rows (K-contiguous) or of W's rows paired
into operands (N-contiguous).
"""
from __future__ import annotations

from contextlib import nullcontext as _nullcontext
from dataclasses import dataclass, replace
from typing import Any

import tilecraft as tc
from tilecraft import _, dsl
from tilecraft.atoms import SM80_16x8x16_F32BF16BF16F32_TN, SM80_16x8x16_F32F16F16F32_TN, cp_async, make_tiled_mma
from tilecraft.dsl import Constexpr, blockIdx, gridDim, hopper, threadIdx
from tilecraft.dsl.expr import make, render
from tilecraft.dsl.memory import RegisterEngine
from tilecraft.dsl.trace import current
from tilecraft.gemm.limits import CTA_RESERVED_SMEM, CTA_SMEM, SM_SMEM
from tilecraft.layout.inttuple import imin
from tilecraft.quant.pack import PackedFormat, PackedWeight, k_block
from tilecraft.tensor import Tensor

__all__ = ["MixedConfig", "MixedGemm", "mixed_gemm", "mixed_gemm_kernel", "pick_mixed_config", "launch_grid", "MAX_M"]

#: rows of x one launch handles (8 m-columns per mma, up to 4 of them: the B fragments of a chunk take
#: 2 registers per k-block and m-block); larger M runs in slices, each streaming W again
MAX_M = 32
#: shared memory a CTA may hold for its async_copy stages: an H100's 227 KB less the split-K reduction's (up to
#: the 227 KB with ``MixedConfig.reuse``, the reduction in the stages)
SMEM_MAX = 200 * 1024
#: programmatic dependent launches (sm_90): the sixteenths of its k-range whose weights a CTA asks L2 for
#: while the previous kernel of the stream finishes (0: none; the launch overlap alone); MixedGemm's default
PDL_PREFETCH = 2
_ELEM = {"float16": (dsl.float16, SM80_16x8x16_F32F16F16F32_TN), "bfloat16": (dsl.bfloat16, SM80_16x8x16_F32BF16BF16F32_TN)}
#: int8 weights from this M on take chunks of 64 in the shared-memory stages (M <= 16), not 128: a stage holds
#: half the bytes, so more of them fit beside one another. Fifty-fifth session (H200, W8A16 per-channel, PDL stream,
#: benchmarks/probe_small_m.py): N = K = 8192 at M = 16 19.2 us against 22.5 (four stages in one wave where three of
#: 128 fitted), Llama-3-8B gate_up 35.5 against 55.8 and 70B gate_up 148.9 against 190.4 (two CTAs per SM where one
#: fitted); at M = 8 1.01-1.13x at six layers. At M <= 4 (one tile, a stage of 2-3 KB) it lost at 8B down and o,
#: 70B down (0.91-0.98x)
INT8_CHUNK64_FROM_M = 5
#: halves padding each row of x in an async_copy stage: rows 136 halves apart put the 8-byte reads of
#: lanes (g, q) (row g, halves 4q + 16j) in 32 distinct banks
_X_PAD = 8
#: a symmetric weight's zero pair (8 or 128 in both halves) as 16-bit float bits, by (dtype, bits)
_SYMMETRIC_ZERO = {("float16", 4): 0x48004800, ("float16", 8): 0x58005800,
                   ("bfloat16", 4): 0x41004100, ("bfloat16", 8): 0x43004300}


@dataclass(frozen=True)
class DenseFormat:
    """A 16-bit weight read in place (tilecraft/gemm/skinny.py): the kernel's weight operand is then W^T (N, K)
    itself (``n_major`` False: K-contiguous rows, an nn.Linear weight) or W (K, N) (``n_major``: N-contiguous
    rows), in the activations' dtype, with no scales or zero points. Lane (g, q) reads 16 bytes (8 values) of a
    row at a time: K-contiguous, W^T row g (+8) of a tile at k 32 i + 8 q, whose halves are its A operands of
    two k-blocks (B's k permuted to match: x[m, 32 i + 8 q + 4 j'..+3] for the i-th pair's block j');
    N-contiguous, rows k 16 j + 4 q + r (r = 0..3) of W at n 8 g .. 8 g + 7 of a 64-column group, which
    pair up (prmt) into the A operands of four tiles whose row g / g + 8 are columns 8 g + 2 i / + 1 of the
    group (tile i of four), so x keeps the packed layout's k permutation."""

    dtype: str
    n_major: bool = False
    bits: int = 16
    group_size: None = None
    zero_point: bool = False

    @property
    def name(self) -> str:
        return f"{'fp16' if self.dtype == 'float16' else 'bf16'}-{'n' if self.n_major else 'k'}major"


def _k_block(fmt: Any) -> int:
    """k values per 16-byte lane load of one 16-row tile (16 for a dense 16-bit weight)."""
    return 16 if fmt.bits == 16 else k_block(fmt.bits)


@dataclass(frozen=True)
class MixedConfig:
    """One tiling of the mixed-input GEMM: ``warps`` per CTA (they split the CTA's k-range), ``tiles``
    16-row tiles per CTA (every warp covers all of them), ``chunk`` k values per warp iteration (a
    multiple of KB = 64 / 32 for int4 / int8, and a multiple or a divisor of the group size: a chunk
    shorter than a group is scaled by its group's scales on its own), ``stages`` register buffers per warp
    (chunks j+1 .. j+stages-1 are in flight while chunk j is converted), ``min_ctas`` the CTAs per SM
    ptxas must make room for (it caps the registers; None: ptxas's choice), ``prefetch`` how many chunks beyond the register
    buffers each warp asks L2 to fetch from HBM ahead of its loads (no registers held), ``splits`` slices
    of K (grid.y; None: chosen per problem). ``async_copy``: the ``stages`` buffers are per-lane slots in
    shared memory filled by ``cp.async`` (up to 12; no registers held while the bytes travel), read into
    one register buffer just before the chunk is converted. ``runs``: each warp of a CTA takes a contiguous
    run of its chunks instead of every ``warps``-th one (warp w: w, w + warps, ...). ``x_regs`` (with
    async_copy): the stages hold the weights only; each lane loads its B fragments of x from global memory
    (L2) into registers one chunk ahead, so x takes no shared memory and the warp never meets. ``reuse`` (with
    async_copy): the warps' reduction at the end takes over the weights' stages (after one more barrier) instead of
    shared memory of its own."""

    warps: int = 4
    tiles: int = 4
    chunk: int = 128
    splits: int | None = None
    stages: int = 2
    min_ctas: int | None = None
    prefetch: int = 0
    async_copy: bool = False
    runs: bool = False
    x_regs: bool = False
    reuse: bool = False

    @property
    def threads(self) -> int:
        return 32 * self.warps

    @property
    def name(self) -> str:
        s = f"w{self.warps}_t{self.tiles}_c{self.chunk}"
        s += f"_p{self.stages}" if self.stages != 2 else ""
        s += f"_o{self.min_ctas}" if self.min_ctas else ""
        s += f"_f{self.prefetch}" if self.prefetch else ""
        s += "_a" if self.async_copy else ""
        s += "_r" if self.runs else ""
        s += "_x" if self.x_regs else ""
        s += "_u" if self.reuse else ""
        return s + (f"_s{self.splits}" if self.splits else "")

    def validate(self, fmt: PackedFormat, K: int, N: int, M: int = MAX_M) -> None:
        """Raise ValueError naming the condition this tiling breaks for a (K, N) weight of format fmt and
        up to M rows of x."""
        kb = _k_block(fmt)
        if self.warps not in (1, 2, 4, 8, 16) or self.tiles not in (1, 2, 4, 8):
            raise ValueError(f"{self.name}: warps must be 1, 2, 4, 8 or 16 and tiles 1, 2, 4 or 8")
        most = 12 if self.async_copy else 4
        if not 2 <= self.stages <= most:
            raise ValueError(f"{self.name}: stages must be in 2..{most}"
                             f"{'' if self.async_copy else ' (register buffers; up to 12 with async_copy)'}")
        if self.x_regs and not self.async_copy:
            raise ValueError(f"{self.name}: x_regs needs async_copy (register buffers carry x with the weights)")
        if self.reuse and not _stages_hold_reduction(self, fmt, M):
            raise ValueError(f"{self.name}: reuse needs shared-memory stages (async_copy) that hold the warps' "
                             f"reduction (chunk / {kb} k-blocks x stages >= {_m_blocks(M)} m-blocks)")
        if not 0 <= self.prefetch <= 8:
            raise ValueError(f"{self.name}: prefetch must be in 0..8 chunks")
        if self.min_ctas is not None and not 1 <= self.min_ctas <= 2048 // self.threads:
            raise ValueError(f"{self.name}: min_ctas must be in 1..{2048 // self.threads} for {self.threads} threads")
        if self.chunk % kb or self.chunk % 16:
            raise ValueError(f"{self.name}: chunk must be a multiple of {kb} for int{fmt.bits}")
        if fmt.bits == 16:
            if self.prefetch:
                raise ValueError(f"{self.name}: a dense weight takes no L2 prefetch (prefetch must be 0)")
            if not fmt.n_major and self.chunk % 32:
                raise ValueError(f"{self.name}: chunk must be a multiple of 32 for a K-contiguous dense weight")
            if fmt.n_major and self.tiles % 4:
                raise ValueError(f"{self.name}: tiles must be 4 or 8 for an N-contiguous dense weight (its lanes' "
                                 f"loads serve four tiles)")
        if fmt.group_size is not None and self.chunk % fmt.group_size and fmt.group_size % self.chunk:
            raise ValueError(f"{self.name}: chunk must be a multiple or a divisor of the group size {fmt.group_size}")
        if K % self.chunk:
            raise ValueError(f"{self.name}: K = {K} is not a multiple of chunk = {self.chunk}")
        if N % (16 * self.tiles):
            raise ValueError(f"{self.name}: N = {N} is not a multiple of 16 x tiles = {16 * self.tiles}")
        if stage_smem_bytes(self, fmt, M) > SMEM_MAX and not self.reuse:
            raise ValueError(f"{self.name}: its shared-memory stages take {stage_smem_bytes(self, fmt, M)} bytes for "
                             f"int{fmt.bits} and M = {M}, more than the stages may take beside the split-K "
                             f"reduction ({SMEM_MAX}); use fewer stages or tiles")
        total = cta_smem_bytes(self, fmt, M)
        if total > CTA_SMEM:
            raise ValueError(f"{self.name}: its shared-memory stages and the warps' reduction take {total} bytes for "
                             f"int{fmt.bits} and M = {M}, more than a CTA may have ({CTA_SMEM}); "
                             f"use fewer stages, warps or tiles")
        if self.splits is not None and not 1 <= self.splits <= K // self.chunk:
            raise ValueError(f"{self.name}: splits must be in 1..K/chunk = {K // self.chunk}")


def _word(frag: Tensor, *coord: Any) -> str:
    """The C++ lvalue of the 32-bit register holding frag's element at coord (and the next ones up to
    32 bits, which must follow it contiguously)."""
    eng = frag.engine
    if not isinstance(eng, RegisterEngine):
        raise dsl.TraceError(f"expected a register fragment, got {frag!r}")
    per = 32 // eng.dtype.bits
    off = frag.offset + frag.layout(coord if len(coord) != 1 else coord[0])
    if not isinstance(off, int) or off % per:
        raise dsl.TraceError(f"element {coord} of {frag.layout} does not start a 32-bit register")
    return f"reinterpret_cast<tc::u32*>({eng.var.ph})[{off // per}]"


def _regs(frag: Tensor) -> str:
    """A ``tc::u32*`` to a whole fragment that a helper writes (its elements count as rewritten)."""
    eng = frag.engine
    for i in range(len(eng.versions)):
        eng.versions[i] += 1
    return f"reinterpret_cast<tc::u32*>({eng.var.ph})"


def _call(fn: str, *args: str) -> None:
    current().emit(f"tc::mixed::{fn}({', '.join(args)});")


def _addr(t: Tensor, coord: Any) -> str:
    """The address of t's element at coord (a global-memory tensor)."""
    return t.engine.address(t.offset + t.layout(coord))


@dsl.kernel
def mixed_gemm_kernel(x, qw, scales, zeros, bias, y, ws, counters, fmt: Constexpr, cfg: Constexpr, mb: Constexpr,
                      xrows: Constexpr = 0, prefetch_pdl: Constexpr = None, timeline=None, C=None, alpha=None,
                      beta=None, act: Constexpr = "none", bias_m: Constexpr = False):
    """y (M,N) = x (M,K) @ dequant(qw, scales, zeros) (+ bias); see the module docstring.

    qw (N/16, K/KB, 32, 4) int32, scales / zeros (N/16, K/G, 8, 2) (zeros None when symmetric), bias (N)
    or None; with a DenseFormat fmt, qw is the 16-bit weight itself, W^T (N, K) or W (K, N) (fmt.n_major), rows
    16-byte aligned, and scales, zeros None; ws (M,N) fp32 and counters (N / 16 tiles) int32, zeroed, or None
    without split-K (grid.y = 1);
    mb = ceil(M / 8) m-blocks of 8 columns; xrows (async_copy) the rows of x a stage holds, >= M.
    prefetch_pdl (sm_90, a launch with ``pdl=True``): the sixteenths (0..16) of its k-range whose weights the CTA
    asks L2 for before it waits for the stream's previous kernel (None: not a programmatic dependent launch).
    timeline: None, or an int64 (gridDim.y * gridDim.x, 4) tensor where thread 0 of each CTA records its SM and
    the global timer (ns) at entry, after the wait for the previous kernel (entry again without PDL) and at
    its end (benchmarks/probe_pdl_timeline.py); one per launch, since it is written before the wait.
    The epilogue (the skinny GEMM's, tc.gemm's options): y = act(alpha * sum + beta * C + bias) in fp32, alpha only
    where given, C (M,N) read where given (with beta), the bias per column (or per row: bias_m), act one of tensorop's
    ACTIVATIONS."""
    dsl.launch_bounds(cfg.threads, cfg.min_ctas)
    current().includes.add("tilecraft/mixed.cuh")                       # the conversion and split-K helpers
    dtype, atom = _ELEM[fmt.dtype]
    NT, CK, W, P = cfg.tiles, cfg.chunk, cfg.warps, cfg.stages
    KB = _k_block(fmt)
    M, K = x.shape
    BN = 16 * NT                                                          # rows of W^T (columns of y) per CTA
    grouped = fmt.group_size is not None
    G = fmt.group_size if grouped else CK                                 # k per group of scales
    GPC = max(1, CK // G)                                                 # groups a chunk touches
    KS = min(G, CK)                                                       # k per scaled accumulation
    CPG = max(1, G // CK)                                                 # chunks per group (chunk < group)
    K16 = CK // 16                                                        # mma k-blocks per chunk
    split_k = ws is not None
    N = y.shape[1]
    dense = fmt.bits == 16
    dense_k = dense and not fmt.n_major
    # the packed tensors are contiguous (the host checks): their layouts, with the static inner modes
    mW = qw if dense else Tensor(qw.engine, tc.make_layout((N // 16, K // KB, 32, 4), ((K // KB) * 128, 128, 4, 1)))
    groups = K // G if grouped else 1

    def group(c: Any, gi: int) -> Any:
        """The group of scales of chunk c's gi-th scaled accumulation."""
        return c * GPC + gi if CPG == 1 else c // CPG

    mS = None if dense else Tensor(scales.engine, tc.make_layout((N // 16, groups, 8, 2), (groups * 16, 16, 2, 1)))
    mZ = Tensor(zeros.engine, mS.layout) if zeros is not None else None

    lane = threadIdx.x % 32
    warp = threadIdx.x // 32
    g = lane // 4                                                         # rows g, g+8 of each A tile
    q = lane % 4                                                          # k 4q..4q+3 of each k-block
    rb = blockIdx.x                                                       # row block: columns BN rb .. of y
    T = K // CK                                                           # chunks along K
    c_begin = blockIdx.y * T // gridDim.y                                 # this split's chunks
    c_end = (blockIdx.y + 1) * T // gridDim.y
    n_w = (c_end - c_begin - warp + W - 1) // W                           # chunks of this warp
    if cfg.runs:
        # from w_begin on (the first (c_end - c_begin) % W warps' runs one chunk longer)
        w_begin = c_begin + warp * ((c_end - c_begin) // W) + imin(warp, (c_end - c_begin) % W)

    def chunk(j: Any) -> Any:
        """The warp's j-th chunk (absolute): of its run, or round-robin c_begin + warp + W j."""
        return w_begin + j if cfg.runs else c_begin + warp + W * j

    def record(*fields: int) -> None:
        """Thread 0 writes the global timer (the SM too, for field 1) to timeline[this CTA, fields]."""
        if timeline is not None:
            with dsl.if_(dsl.eq(threadIdx.x, 0)):
                cta, ns = blockIdx.y * gridDim.x + blockIdx.x, dsl.globaltimer()
                for f in fields:
                    timeline[cta, f] = ns
                if 1 in fields:
                    timeline[cta, 0] = dsl.smid()

    record(1)
    if prefetch_pdl is not None:
        # a programmatic dependent launch: this CTA may be running while the stream's previous kernel still
        # does. Nothing that kernel may read or write (x, y, bias, the split-K workspace) is touched before
        # griddep_wait; only L2 is asked for the first prefetch_pdl / 16 of the CTA's chunks of weights (and
        # their scales, zero points), so the weight stream starts during the previous kernel's tail. With
        # runs, these are the first warp's: W4A16 g128 at M = 1, N = K = 8192 on an H100 ran 13.05 us so
        # (13.30 round-robin); with the first 2/16 of every warp's run instead, 13.58 (13.25 round-robin,
        # another machine)
        if prefetch_pdl and dense:
            # a dense weight: the CTA's rows of W^T from its first chunk (one bulk prefetch per row, the threads
            # in turn), or the first chunks' rows k of W, the CTA's BN columns each (the same)
            n_pf = (c_end - c_begin) * prefetch_pdl // 16
            if dense_k:
                for r0 in range(0, BN, cfg.threads):
                    with dsl.if_((r0 + threadIdx.x < BN) & (n_pf > 0)):
                        hopper.prefetch_l2_bulk(tc.local_tile(mW(rb * BN + r0 + threadIdx.x, _), (CK,), (c_begin,)),
                                                n_pf * (2 * CK))
            else:
                for it in dsl.range((n_pf * CK + cfg.threads - 1) // cfg.threads):
                    r = it * cfg.threads + threadIdx.x
                    with dsl.if_(r < n_pf * CK):
                        hopper.prefetch_l2_bulk(tc.local_tile(mW(c_begin * CK + r, _), (BN,), (rb,)), 2 * BN)
        elif prefetch_pdl:
            n_pf = (c_end - c_begin) * prefetch_pdl // 16
            with dsl.if_(dsl.eq(threadIdx.x, 0) & (n_pf > 0)):
                for t in range(NT):
                    hopper.prefetch_l2_bulk(mW(rb * NT + t, c_begin * (CK // KB), _, _), n_pf * (CK // KB) * 512)
                    for mT in (mS, mZ) if grouped else ():
                        if mT is not None:
                            # the groups of n_pf chunks (a group may span several chunks)
                            hopper.prefetch_l2_bulk(mT(rb * NT + t, group(c_begin, 0), _, _),
                                                    n_pf * GPC * 32 if CPG == 1 else
                                                    ((c_begin + n_pf - 1) // CPG + 1 - c_begin // CPG) * 32)
        hopper.griddep_wait()
        # only now may the next kernel launch: its CTAs take the SM slots this kernel's CTAs leave and
        # prefetch while its tail runs; triggered before the wait, a chain of kernels would all launch
        # and prefetch at once (measured: slower than no PDL), one successor at a time is the point
        hopper.griddep_launch_dependents()
    record(2)

    mma = make_tiled_mma(atom)
    thr_mma = mma.get_slice(lane)
    AC = cfg.async_copy
    R = 1 if AC else P                                                    # register buffers
    XREG = AC and cfg.x_regs                                              # x from L2 into registers, a chunk ahead
    # (WORD,KBLK,TILE) x R: a lane's 16-byte loads, 4 words (8 16-bit values of a dense weight) each
    WE, wdt = (8, dtype) if dense else (4, dsl.int32)
    wbuf = [dsl.make_rmem_tensor(wdt, (WE, CK // KB, NT)) for _b in range(R)]
    # x travels with the weights (P register buffers) while its fragments are few; past M = 16 it is
    # loaded (from L1 / L2, where all warps find it) at the start of each chunk's compute, into one
    # buffer; with shared-memory stages, the chunk's rows of x are part of the stage (once, not once per
    # lane of a row) and read at the start of the chunk's compute; with x_regs, chunk j's fragments are
    # loaded from global memory during step j - 1, into buffer j % XB (static in the unrolled step: XB
    # divides P)
    x_ahead = mb <= 2 and not AC
    XB = (2 if P % 2 == 0 else P) if XREG else P if x_ahead else 1
    xbuf = [dsl.make_rmem_tensor(dtype, (4, mb, K16)) for _b in range(XB)]  # (MMA_B,M8,K16)
    sbuf = [dsl.make_rmem_tensor(dtype, (2, GPC, NT)) for _b in range(R)] if grouped else None  # (ROW,GRP,TILE)
    zbuf = [dsl.make_rmem_tensor(dtype, (2, GPC, NT)) for _b in range(R)] if grouped and fmt.zero_point else None
    if AC:
        # the stages in shared memory: every lane's 16-byte weight loads (4-byte scale / zero pairs) land in
        # slots of its own, lanes adjacent (a quarter warp's accesses cover 128 contiguous bytes: no bank
        # conflicts), and only that lane reads them back; the rows of x are shared by the warp's lanes
        # (the main loop's __syncwarp); no barrier: warps never read each other's stages
        cpw = cp_async(16, 16 if dense else 32, cache="global")          # weights: L2 -> smem, not L1
        cps = cp_async(4, 16)
        sW = dsl.smem_tensor(wdt, tc.make_layout((WE, 32, CK // KB, NT, W, P)))  # (WORD,LANE,KBLK,TILE,WARP,STAGE)
        sS = dsl.smem_tensor(dtype, tc.make_layout((2, 32, GPC, NT, W, P))) if grouped else None
        sZ = dsl.smem_tensor(dtype, tc.make_layout((2, 32, GPC, NT, W, P))) if zbuf is not None else None
        # x's rows of the chunk (16-byte cp.async pieces), read by lane (g, q) 8 bytes at a time
        if not XREG:
            XR, XS = xrows or 8 * mb, CK + _X_PAD
            cpx = cp_async(16, 16)
            sX = dsl.smem_tensor(dtype, tc.make_layout((XR, CK, W, P), (XS, 1, XR * XS, XR * XS * W)))  # (ROW,K,WARP,STAGE)
    acc = [dsl.make_rmem_tensor(dsl.float32, (4, 1, mb)) for _t in range(NT)]    # (MMA_C,1,M8) per tile
    for t in range(NT):
        dsl.clear(acc[t])
    tmp = dsl.make_rmem_tensor(dsl.float32, (4, 1, mb)) if grouped else None     # (MMA_C,1,M8) one group
    a_frag = dsl.make_rmem_tensor(dtype, (8, 1))                                  # (MMA_A,1) one A operand

    def load_x(xb: Tensor, c: Any, stage: int | None = None) -> None:
        """The B fragments of chunk c: lane (g, q) loads x[8 m + g, 16 j + 4q ..+3] (8 bytes) per k-block j
        (a K-contiguous dense weight: x[8 m + g, 32 (j // 2) + 8 q + 4 (j % 2) ..+3]), from global memory, or
        (async_copy) from the chunk's rows in shared-memory stage `stage`."""
        for j in range(K16):
            xo = 8 * (j // 2) + j % 2 + 2 * q if dense_k else 4 * j + q       # in 4-value pieces of the chunk
            for m in range(mb):
                row = imin(8 * m + g, M - 1)                              # rows past M: a copy never stored
                if stage is None:
                    dsl.copy(tc.local_tile(x, (1, 4), (row, c * (CK // 4) + xo)), xb(_, m, j))
                else:
                    dsl.copy(tc.local_tile(sX(_, _, warp, stage), (1, 4), (row, xo)), xb(_, m, j))

    def dense_piece(c: Any, t: int, kb: int) -> Tensor:
        """A dense weight's 16 bytes that lane (g, q) keeps in slot (kb, t) for chunk c. K-contiguous: row g + 8 h
        of tile t at k 32 i + 8 q, kb = 2 i + h. N-contiguous: row k = 16 kb + 4 q + r of W at columns 8 g .. of
        the 64-column group t // 4 (r = t % 4); tile t' = 4 (t // 4) + i takes columns 8 g + 2 i, + 1 of each."""
        if dense_k:
            i, h = divmod(kb, 2)
            return tc.local_tile(mW(rb * BN + 16 * t + g + 8 * h, _), (8,), (c * (CK // 8) + 4 * i + q,))
        u, r = divmod(t, 4)
        return tc.local_tile(mW(c * CK + 16 * kb + 4 * q + r, _), (8,), (rb * (BN // 8) + 8 * u + g,))

    def load(b: int, c: Any) -> None:
        """Chunk c (absolute) of this CTA's tiles -> buffer (stage) b: 128-bit weight loads (and x, scales,
        zeros), into registers, or with async_copy, cp.async into the lane's shared-memory slots of stage b."""
        for t in range(NT):
            for kb in range(CK // KB):
                src = dense_piece(c, t, kb) if dense else mW(rb * NT + t, c * (CK // KB) + kb, lane, _)
                if AC:
                    dsl.copy(cpw, src, sW(_, lane, kb, t, warp, b))
                else:
                    dsl.copy(src, wbuf[b](_, kb, t))
        if x_ahead:
            load_x(xbuf[b], c)
        if AC and not XREG:
            per_row = CK // 8                                             # 16-byte pieces per row
            for i0 in range(0, XR * per_row, 32):
                p = lane + i0
                row, pc = p // per_row, p % per_row
                with dsl.if_(row < M):                                    # rows past M are never read
                    dsl.copy(cpx, tc.local_tile(x(row, _), (8,), (c * per_row + pc,)),
                             tc.local_tile(sX(row, _, warp, b), (8,), (pc,)))
        for t in range(NT if grouped else 0):
            for gi in range(GPC):
                for mT, buf, sT in ((mS, sbuf, sS if AC else None), (mZ, zbuf, sZ if AC else None)):
                    if buf is None:
                        continue
                    src = mT(rb * NT + t, group(c, gi), g, _)
                    if AC:
                        dsl.copy(cps, src, sT(_, lane, gi, t, warp, b))
                    else:
                        dsl.copy(src, buf[b](_, gi, t))

    def stage_in(b: int) -> None:
        """async_copy: read the lane's slots of stage b into the register buffer."""
        dsl.copy(sW(_, lane, _, _, warp, b), wbuf[0])
        for sT, buf in ((sS, sbuf), (sZ, zbuf)):
            if buf is not None:
                dsl.copy(sT(_, lane, _, _, warp, b), buf[0])

    KBC = CK // KB                                                        # 16-byte lane loads per tile and chunk
    lines = NT * KBC * 4                                                  # 128-byte lines of a warp's chunk

    def prefetch(c: Any) -> None:
        """Ask L2 for chunk c (absolute) of this CTA's tiles: lane i takes line i (and i + 32, ...), line
        4 (KBC t + kb) + p being bytes 128 p .. of the warp's 512-byte load of tile t, k-block kb."""
        for i0 in range(0, lines, 32):
            li = lane + i0
            t, kb, p = li // (4 * KBC), li // 4 % KBC, li % 4
            with dsl.if_(li < lines) if lines - i0 < 32 else _nullcontext():
                _call("prefetch_l2", _addr(mW, (rb * NT + t, c * KBC + kb, 8 * p, 0)))

    def zero_word(b: int, t: int, gi: int) -> str:
        if not fmt.zero_point:
            return f"{_SYMMETRIC_ZERO[(fmt.dtype, fmt.bits)]:#x}u"
        return _word(zbuf[b], 0, gi, t) if grouped else _word(zpc, 0, t)

    def compute(b: int, c: Any, stage: int | None = None, xi: int = 0, then: Any = None) -> None:
        """acc += chunk c from buffer b: per group and tile, convert each k-block's A operand and multiply
        (async_copy: x from shared-memory stage `stage`; x_regs: x's fragments already in xbuf[xi]);
        then(v): emitted right after the first mma, v one of its sums."""
        xb = xbuf[b] if x_ahead else xbuf[xi]
        if not x_ahead and not XREG:
            load_x(xb, c, stage)
        for gi in range(GPC):
            ks = range(gi * (KS // 16), (gi + 1) * (KS // 16))
            for t in range(NT):
                dst = tmp if grouped else acc[t]
                if grouped:
                    dsl.clear(tmp)
                for j in ks:
                    kb, jj = divmod(j, KB // 16)
                    if dense_k:                                          # rows g, g + 8: pieces 2 i, 2 i + 1
                        i, jj = divmod(j, 2)
                        _call("dense_a", *(_word(wbuf[b], 2 * (2 * jj + hi), 2 * i + h, t) for hi in (0, 1)
                                           for h in (0, 1)), _regs(a_frag))
                    elif dense:                                          # rows k 4q + r of the 4 tiles' pieces
                        u, i = divmod(t, 4)
                        _call("dense_n_a", *(_word(wbuf[b], 2 * i, j, 4 * u + r) for r in range(4)), _regs(a_frag))
                    elif fmt.bits == 4:
                        _call(f"dequant_u4_{'f16' if fmt.dtype == 'float16' else 'bf16'}", _word(wbuf[b], jj, kb, t),
                              zero_word(b, t, gi), _regs(a_frag))
                    else:
                        _call(f"dequant_u8_{'f16' if fmt.dtype == 'float16' else 'bf16'}",
                              _word(wbuf[b], 2 * jj, kb, t), _word(wbuf[b], 2 * jj + 1, kb, t), zero_word(b, t, gi),
                              _regs(a_frag))
                    dsl.gemm(mma, a_frag, xb(_, _, j), dst)          # (MMA_C,1,M8) += A_j x_j
                    if then is not None:
                        then(dst(0))
                        then = None
                if grouped:
                    s_g = dsl.convert(sbuf[b](0, gi, t), dsl.float32)      # scale of row g
                    s_h = dsl.convert(sbuf[b](1, gi, t), dsl.float32)      # scale of row g+8
                    for i in range(4 * mb):
                        acc[t][i] = acc[t](i) + tmp(i) * (s_h if i % 4 >= 2 else s_g)

    if not grouped and fmt.zero_point:
        zpc = dsl.make_rmem_tensor(dtype, (2, NT))                        # (ROW,TILE) per-channel zero points
        for t in range(NT):
            dsl.copy(mZ(rb * NT + t, 0, g, _), zpc(_, t))

    #
    # Main loop: chunks j+1 .. j+P-1 travel to P-1 buffers while chunk j is converted and multiplied from
    # the P-th; step s of an iteration refills the buffer step s-1 has just consumed. With prefetch = D,
    # chunks j+P .. j+P+D-2 are on their way from HBM to L2 as well, and step j asks for chunk j+P+D-1.
    #
    # With async_copy the buffers are shared-memory stages and each load is one cp.async group (committed
    # even when empty, so that the count of younger groups holds to the end). Step j first waits for
    # chunk j's group (P - 2 younger ones stay in flight) and meets the warp (__syncwarp): the rows of x
    # are copied by some lanes and read by all, so every lane's copies of chunk j must be complete
    # before any lane reads them, and every lane must be done with chunk j - 1 (read at step j - 1)
    # before the stage it used is refilled, next, with chunk j + P - 1.
    #
    # With x_regs, x's rows are no part of a stage: the warp's lanes share nothing, so there is no
    # __syncwarp. Each lane's loads of chunk j + 1's fragments of x leave during step j, right after its
    # first mma: ptxas gives all of x's loads one scoreboard, and the first use of chunk j's fragments waits
    # for every load on it, so loads issued before that use would be waited for a chunk early.
    D = cfg.prefetch
    for s in range(P - 1 + D):
        with dsl.if_(s < n_w):
            if s < P - 1:
                load(s, chunk(s))
            else:
                prefetch(chunk(s))
        if AC and s < P - 1:
            dsl.cp_async_commit()
    if XREG:
        with dsl.if_(n_w > 0):
            load_x(xbuf[0], chunk(0))

        def next_x(j: Any, s: int) -> Any:
            def go(v: Any) -> None:
                # ptxas would hoist these loads above the mma (they are independent of it) and so back under
                # the wait; a zero that ptxas cannot prove zero, computed from the mma's sum, pins them after it
                # (zero_after: blockIdx.x >> 30, and grid.x = N / (16 tiles) is far below 2^30)
                z = dsl.declare(make("raw", (f"tc::mixed::zero_after({render(v)})",), "int"), "after_mma")
                with dsl.if_(j + 1 < n_w):
                    load_x(xbuf[(s + 1) % XB], chunk(j + 1) + z)
            return go
    for it in dsl.range((n_w + P - 1) // P):
        for s in range(P):
            j = P * it + s                                                # this step's chunk (of the warp's)
            if D:
                with dsl.if_(j + P - 1 + D < n_w):
                    prefetch(chunk(j + P - 1 + D))
            if AC:
                with dsl.if_(j < n_w) if s else _nullcontext():
                    dsl.cp_async_wait(P - 2)
                    if not XREG:
                        dsl.syncwarp()
            with dsl.if_(j + P - 1 < n_w):
                load((s + P - 1) % P, chunk(j + P - 1))
            if AC:
                dsl.cp_async_commit()
            with dsl.if_(j < n_w) if s else _nullcontext():               # s = 0: it < ceil(n_w / P), j < n_w
                if AC:
                    stage_in(s)
                compute(0 if AC else s, chunk(j), s if AC else None, s % XB, next_x(j, s) if XREG else None)

    if not grouped and not dense:
        # per-channel: one scale per row, applied once to the whole sum
        spc = dsl.make_rmem_tensor(dtype, (2, NT))                        # (ROW,TILE)
        for t in range(NT):
            dsl.copy(mS(rb * NT + t, 0, g, _), spc(_, t))
            s_g = dsl.convert(spc(0, t), dsl.float32)
            s_h = dsl.convert(spc(1, t), dsl.float32)
            for i in range(4 * mb):
                acc[t][i] = acc[t](i) * (s_h if i % 4 >= 2 else s_g)

    #
    # The warps' partial sums meet in shared memory; each thread then owns elements (n, m) of the CTA tile
    #
    red = tc.make_layout((BN, 8 * mb, W))                                 # (BN,M8*8,WARPS)
    if cfg.reuse:
        # in the weights' stages, once every warp is done with them (no copy may still land in them either)
        dsl.cp_async_wait(0)
        dsl.syncthreads()
        sRed = dsl.recast_smem(sW, 0, dsl.float32, red)
    else:
        sRed = dsl.smem_tensor(dsl.float32, red)
    for t in range(NT):
        sTile = tc.local_tile(sRed(_, _, warp), (16, 8 * mb), (t, 0))     # (16,M8*8) this warp's tile t
        if dense and fmt.n_major:                                         # rows g, g + 8: columns 8 g + 2 i, + 1
            u, i = divmod(t, 4)
            sTile = Tensor(sRed.engine, tc.make_layout(((8, 2), 8 * mb), ((8, 1), BN)),
                           sRed.offset + sRed.layout((64 * u + 2 * i, 0, warp)))
        dsl.copy(acc[t], thr_mma.partition_C(sTile))                      # (MMA_C,1,M8)
    dsl.syncthreads()
    elems = BN * 8 * mb
    owned = []                                                            # (n, m, n_l) of this thread's elements
    for e0 in range(0, elems, cfg.threads):
        e = e0 + threadIdx.x
        owned.append((rb * BN + e % BN, e // BN, e % BN))

    def store(n: Any, m: Any, v: Any) -> None:
        if alpha is not None:
            v = alpha * v
        if C is not None:
            v = v + beta * C(m, n)
        if bias is not None:
            v = v + bias(m if bias_m else n)
        y[m, n] = v if act == "none" else make("call", (f"tc::{act}", v), "float")

    for n, m, n_l in owned:
        with dsl.if_(m < M):                                              # m < M <= 8 mb: inside sRed
            part = sRed(n_l, m, 0)
            for w in range(1, W):
                part = part + sRed(n_l, m, w)
            if split_k:
                _call("red_add_f32", _addr(ws, (m, n)), render(part))
            else:
                store(n, m, part)
    if not split_k:
        record(3)
        return
    with dsl.if_(dsl.arrive_last(counters, rb, gridDim.y)):                # the last CTA resets its counter
        # the last CTA of this row block: the sums are complete; write y and leave the workspace zeroed
        for n, m, _n_l in owned:
            with dsl.if_(m < M):
                v = dsl.declare(make("raw", (f"tc::mixed::ld_cg_f32({_addr(ws, (m, n))})",), "float"), "sum")
                ws[m, n] = 0.0
                store(n, m, v)
    record(3)


# ----------------------------------------------------------------------------- host side

def _check_device(x: Any) -> None:
    """x on a CUDA device of compute capability 8.0 or newer (mma.sync with bf16, cp.async-era loads)."""
    if not x.is_cuda:
        raise ValueError(f"the mixed-input GEMM runs on CUDA tensors, got x on {x.device}")
    cc = _device_cc(x)
    if cc[0] < 8:
        raise ValueError(f"the mixed-input GEMM needs sm_80 or newer, this GPU is sm_{cc[0]}{cc[1]}")


def _smem_per_cta(x: Any) -> int:
    """The most shared memory a CTA may have on x's GPU (its opt-in limit; an H100's off a GPU)."""
    if not x.is_cuda:
        return CTA_SMEM
    from tilecraft.runtime.device import device_info
    return device_info(x.device.index).max_shared_memory_per_block_optin


def _sm_count(x: Any) -> int:
    from tilecraft.gemm.op import _device_facts
    return _device_facts(x.device)[0] if x.is_cuda else 132


def pick_mixed_config(fmt: PackedFormat, M: int, K: int, N: int, sms: int = 132,
                      smem: int = CTA_SMEM) -> MixedConfig:
    """The tiling for a problem (splits left to the launch, which knows the kernel's occupancy), as the
    H100 sweeps (``benchmarks/bench_mixed.py --sweep``, N = K = 8192) ranked them: 4 warps; 128-value
    chunks where K allows (64 for groups of 32, whose per-group scales and zero points then stay in
    registers). Up to M = 8 (int8: 16), four shared-memory stages filled by cp.async and one 16-row tile per CTA,
    two past M = 4 (int4: two from M = 1 where they make 1.5 row blocks an SM or more and fill the SMs evenly;
    fifty-sixth session, H200, 1.04-1.13x at N = K = 8192). W4 g128, M = 1: 17.0 us against 19.0 for three register
    buffers, two tiles and L2 prefetch (more stages were slower: 18.3 with six, 22.5 with twelve); M = 8: 18.3 with
    two tiles, 19.5 with one. W8 per-channel M = 1: 26.9 against 27.2; M = 8: 27.7 with two tiles, 31.1 with one;
    M = 16: three stages. The stages are the most, up to four, that keep the grid in one wave on `sms` SMs (an
    H100's shared memory): four 34 KB int8 stages at M = 16 left one CTA per SM and two waves (a stream of PDL
    launches, eleventh session: 30.7 us, against 26.2 with three and 26.0 with two). int8 from M = 5 takes chunks of
    64 there (``INT8_CHUNK64_FROM_M``), so four 17 KB stages fit at M = 16. Where one wave of two tiles leaves two
    stages (N = 13824..16384), four tiles a CTA in three; int4 at M <= 4 keeps four stages, with the warps' reduction
    in them (``reuse``) where only that lets up to four CTAs an SM make one wave (N = 16384, M = 3..4).
    int4 at M = 9..16: 8 warps, four tiles, two shared-memory stages (where N allows four tiles), or two
    tiles of 4 warps with x in registers (``x_regs``) and four stages where they make 0.8-1.0 of three CTAs
    per SM (Llama-3-70B qkv, N = 12288); M = 17..32: two tiles with x in registers, four stages of 4 warps
    (int4, where two CTAs per SM fill the waves) or two of 8 warps (int4) or 4 (int8), x in the stages
    where ptxas would spill or it measured slower. Otherwise register buffers: two tiles up to M = 16 (int4,
    three buffers), one past that (the accumulators take the registers).
    Every pick deals the chunks to the warps round-robin but int8's at M = 9..16 in one tile (or in chunks other than
    64), whose warps take runs.
    Where a tiling's CTAs would leave the SMs lopsided (``wave_fill``) and half its tiles spread them better,
    the pick takes half the tiles (Llama-3-8B qkv for int8; int4 at M = 9..16 where x in registers does not
    apply), and so where they reach the SMs unsplit and the whole tiles would need slices (int4 at N = 4096,
    M = 9..16).
    Shared-memory tilings are taken only where their stages and reduction fit `smem`, the most a CTA may have
    on the GPU (default an H100's 227 KB; an A100 has 163 KB, sm_86 / sm_89 99 KB)."""
    mb = _m_blocks(M)

    def fits(c: MixedConfig) -> bool:
        return cta_smem_bytes(c, fmt, M) <= smem

    kb = k_block(fmt.bits)
    first = 64 if fmt.group_size == 32 else 128
    chunk = next(c for c in (128, 64, 32) if c <= first and K % c == 0 and c % kb == 0
                 and (fmt.group_size is None or c % fmt.group_size == 0))
    # int8 from M = 5 on in the shared-memory stages: chunks of 64 (a group of 128 then scaled in halves). At M =
    # 9..16 in chunks of 64, fp16 with groups took 128 registers and a 4-byte spill in the main loop (sm_90a, NVRTC
    # 13) unless the kernel asks for two CTAs per SM (none; a bound that costs nothing: 4 warps keep up to 255
    # registers)
    staged_chunk = 64 if fmt.bits == 8 and M >= INT8_CHUNK64_FROM_M and K % 64 == 0 else chunk
    cap = 2 if mb == 2 and staged_chunk == 64 and fmt.dtype == "float16" and fmt.group_size else None

    def staged(tiles: int) -> MixedConfig | None:
        # the most stages, up to four, that let the row blocks run in one wave on `sms` SMs (four where no
        # count does): at M = 9..16 the chunk's 16 rows of x make an int8 stage 17 KB (34 KB in chunks of 128).
        # int4 at M <= 4 keeps four stages: one tile's 1 KB a warp per stage left too few bytes in flight where one
        # wave took two or three (and at N = 28672, M = 1, the registers held ten CTAs an SM, not the wave's 14):
        # 1.03-1.26x at N = 14336..28672 (H200, PDL stream, fifty-sixth session, probe_small_m.py's o4 / s4 cases).
        # Two tiles (2 KB) in four stages were timed only against one tile in four (m4 cases). There the warps'
        # reduction moves into the stages where only that lets the wave's CTAs share the SMs (``reuse``): at M = 3..4
        # (four rows of x, 13.3 KB a stage) four CTAs an SM at N = 16384 / 16896, where three took 1.3 waves:
        # 1.04-1.15x at K = 4096 / 8192 / 14336 (H200, fifty-seventh session, probe_small_m.py's u4 / r4 cases); where
        # the CTAs fit either way it ran even (0.99-1.0x: M = 1 / 2, zero points, g32, per channel). Only up to four
        # CTAs an SM, which the registers always hold (128 threads, at most 128 registers at M <= 4): from five the
        # registers decide, and at N = 18944..32768 it ran 0.98-1.02x (r5 cases)
        per_sm = -(-(N // (16 * tiles)) // sms)
        # int8 at M = 9..16: each warp a run of chunks (see the module docstring), but in chunks of 64 two tiles deal
        # them round-robin: 1.01-1.04x runs at six of eight layers, M = 12 / 16 (H200, fifty-fifth session; N = K =
        # 8192 18.8 against 19.2 us), 0.98-1.0x at 8B gate_up and 70B qkv; one tile keeps its runs (8B qkv: 0.96x
        # round-robin)
        runs = mb == 2 and (tiles == 1 or staged_chunk != 64)
        return most_stages(MixedConfig(warps=4, tiles=tiles, chunk=staged_chunk, stages=4, async_copy=True, runs=runs,
                                       min_ctas=cap), fmt, M, per_sm, smem,
                           counts=(4,) if fmt.bits == 4 and M <= 4 else (4, 3, 2),
                           reuse=fmt.bits == 4 and M <= 4 and per_sm <= 4)

    def balanced(cfg: MixedConfig, alt: MixedConfig | None, below: float) -> MixedConfig:
        # cfg, unless its CTAs leave the SMs lopsided (``wave_fill`` under `below`: the busiest SM runs
        # 1/below times the mean or more) and alt's (half the tiles, twice the row blocks) spread better by
        # 0.1 of the busiest SM's count or more
        if alt is None or N % (16 * alt.tiles):
            return cfg
        here, there = (wave_fill(c, fmt, M, K, N, sms, smem) for c in (cfg, alt))
        return alt if here < below and there >= here + 0.1 else cfg

    # two tiles of 4 warps with x in registers and four stages of weights (M = 9..32, where it applies)
    deep = MixedConfig(warps=4, tiles=2, chunk=chunk, stages=4, async_copy=True, x_regs=True)
    if mb == 1 or (mb == 2 and fmt.bits == 8):
        # int4 in two tiles at M = 1..4 too where they make 1.5 row blocks an SM or more and leave the SMs even (fill
        # 0.9 or more): 1.04-1.13x at N = K = 8192, 8B gate_up and 70B down, M = 1..4 (one loss: 0.93x at 8192 x
        # 16384, M = 4); 0.95x at 70B qkv (fill 0.81), 0.93-0.95x at 8B qkv (1.45 blocks an SM, fill 0.73); N = 4096
        # (0.97 an SM) not measured (H200, PDL stream, fifty-sixth session, probe_small_m.py's m4 cases)
        two = M > 4 or (fmt.bits == 4 and N // 32 >= 1.5 * sms)
        tiles = 2 if two and N % 32 == 0 else 1
        cfg = staged(tiles)
        if cfg is not None:
            # int8 at Llama-3-8B qkv (N = 6144), M = 8: 192 row blocks of two tiles, one split at two CTAs per
            # SM, left 60 SMs running two and 72 one. One tile each (384 blocks, 2.91 per SM) ran 10.3 us
            # against 12.0; at M = 16 11.1 against 13.2, per channel with zero points at M = 6 10.2 against
            # 11.4, int4 g128 with zero points (two CTAs per SM too) at M = 8 7.0 against 7.6 (H100, PDL
            # stream, in turn; thirty-sixth session, benchmarks/probe_small_m.py)
            if tiles == 1:
                return cfg
            cfg = balanced(cfg, staged(1), 0.8 if M > 4 else 0.9)
            # Where one wave of two tiles leaves two stages (int4 at M = 5..8, int8 at M = 9..16; 4 CTAs per SM at
            # N = 14336 / 16384), four tiles a CTA in three: twice the bytes of weights per byte of x read from L2,
            # half the CTAs. 1.08-1.26x at K = 4096 / 8192 / 14336 (H200, PDL stream, fifty-sixth session,
            # probe_small_m.py's t4 / f4 cases; 0.99x at N = 22016, int8 M = 8, where two tiles ran six CTAs an SM);
            # where two tiles keep three stages or more (N = 12288 / 28672) four lost
            four = staged(4) if cfg.tiles == 2 and cfg.stages == 2 and N % 64 == 0 else None
            return four if four is not None and four.stages > 2 else cfg
    wide = MixedConfig(warps=8, tiles=4, chunk=chunk, stages=2, async_copy=True)
    if fmt.bits == 4 and mb == 2 and N % 64 == 0 and fits(wide):
        # int4 at M = 9..16: 8 warps over four tiles in two shared-memory stages (one CTA per SM). Each CTA
        # reads its k-range of x once, so four tiles halve the rows of x read from L2 per weight byte
        # (at two tiles they were twice the weight bytes): 15.8 us against 18.1 for three register
        # buffers of two tiles (H100, N = K = 8192, g128, PDL stream; fourteenth session). Runs: 15.9-16.0
        # against 15.8 on an H100, 15.0 against 14.7 on an H200 (twenty-fifth session). Where its row blocks
        # leave the second wave mostly empty, two tiles (M = 17..32's tiling) despite the rows of x they
        # read twice: Llama-3-70B qkv (N = 10240, 160 blocks of four tiles on 132 SMs) 26.2 us against
        # 27.9 at M = 16 (g128), 28.6 against 32.1 at M = 12 (g32). Less lopsided, four tiles stay: at
        # N = 18944 (296 blocks) two tiles ran 23.5 against 22.4, at N = 12288 (192) 15.8 against 16.2
        # (thirty-sixth session)
        # Where four tiles are too few row blocks to reach the SMs unsplit and two are not, two: Llama-3-8B o
        # (N = K = 4096, 64 blocks of four in two slices against 128 of two) 6.1 us against 8.7, 14336 x 4096
        # 15.6 against 16.7 (thirty-sixth session)
        # Where two tiles make 0.8-1.0 of three CTAs per SM, one wave of CTAs of 4 warps with x in registers
        # and four stages of weights (two or three CTAs per SM by their registers, three at g128): Llama-3-70B
        # qkv (N = 10240, 320 blocks) 21.4 / 22.9 us against 25.5 / 26.2 at M = 12 / 16, with zero points
        # 22.2 / 24.1 against 26.8 / 27.6, g32 26.4 / 26.8 against 28.6 / 29.2; N = 12288 13.1 / 14.0 against
        # 16.0 / 16.3 for four tiles. With fewer blocks they lost (N = K = 8192 17.9 against 15.7 at M = 16,
        # N = 6144 10.0 against 8.8), and with more (N = 18944, 592 blocks, 24.3 against 22.5) (thirty-
        # seventh session, benchmarks/probe_small_m.py)
        if 0.8 * 3 * sms <= N // 32 <= 3 * sms and fits(deep):
            return deep
        half = MixedConfig(warps=8, tiles=2, chunk=chunk, stages=2, async_copy=True)
        if fits(half) and grid_splits(wide, fmt, M, K, N, sms, smem) > 1 \
                and grid_splits(half, fmt, M, K, N, sms, smem) == 1:
            return half
        return balanced(wide, half if fits(half) else None, 0.7)
    if mb > 2 and N % 32 == 0:
        # M = 17..32: two tiles, 8 warps for int4 and 4 for int8, in two shared-memory stages, where they
        # fit; register buffers read 32 rows of x per tile from L2 and took 48-50 us (int4) and 51-60 us
        # (int8) at N = K = 8192 on an H100, these 26-32 and 30-37 us. With x in registers (x_regs) the
        # stages hold weights only, and at the eight Llama-3 layer shapes (thirty-seventh session, H100, PDL
        # stream, M = 20 / 32): int8 ran 0.94-1.46x as fast as with x in the stages (1.0x or more at 13 of 16;
        # N = K = 8192 27.1 / 29.0 against 28.8 / 35.8 us), int4 in 8 warps 0.96-1.23x. For int4, four stages
        # of 4 warps fit too (two CTAs per SM by their registers) and ran faster still where their CTAs fill
        # the waves about as well as one CTA of 8 warps per SM: N = K = 8192 20.2 / 26.8 against 27.4 / 31.8,
        # Llama-3-8B qkv (N = 6144) 12.0 / 15.9 against 14.6 / 17.6, 70B gate_up 128.4 / 171.9 against
        # 174.9 / 204.2; not at 128 row blocks (8B o and down: one CTA of 4 warps per SM), nor at 70B qkv's
        # 320 (36.7 against 31.6 for 8 warps at M = 20). x stays in the stages with 32 rows of groups of
        # 64, and four stages with zero points take 8 warps at 32 rows: ptxas spills there (x's registers).
        # At 32 rows x stays in the stages where the row blocks are no more than the SMs (8B o: int4 10.3
        # against 9.9, 10.5 against 9.8 on an H200), and for int8 where the registers of x, two CTAs per SM
        # instead of three, take more waves (70B qkv: 53.1 against 49.5, 52.2 against 49.0 on an H200)
        blocks = N // 32

        def fill(per_sm: int) -> float:
            return _fill(blocks, per_sm * sms)

        wide = MixedConfig(warps=8 if fmt.bits == 4 else 4, tiles=2, chunk=chunk, stages=2, async_copy=True,
                           x_regs=True)
        plain = replace(wide, x_regs=False)
        x_ok = mb < 4 or (fmt.group_size != 64 and blocks > sms and (fmt.bits == 4 or fill(2) >= fill(3)))
        deep_ok = x_ok and (mb < 4 or not fmt.zero_point)                  # else ptxas spills
        cands = [deep] if fmt.bits == 4 and deep_ok and fill(2) >= 0.8 * fill(1) else []
        cands += [wide] if x_ok else []
        for cfg in [*cands, plain]:
            try:
                cfg.validate(fmt, K, N, min(M, MAX_M))
                if fits(cfg):
                    return cfg
            except ValueError:
                pass
    tiles = 2 if mb <= 2 else 1
    while N % (16 * tiles):
        tiles //= 2
    if fmt.bits == 4:
        return MixedConfig(warps=4, tiles=tiles, chunk=chunk, stages=3 if mb <= 2 else 2)
    return MixedConfig(warps=4, tiles=tiles, chunk=chunk)


def most_stages(cfg: MixedConfig, fmt: PackedFormat, M: int, per_sm: int, smem: int = CTA_SMEM,
                counts: tuple[int, ...] = (4, 3, 2), reuse: bool = False) -> MixedConfig | None:
    """cfg in the most stages of `counts` that fit `smem` and let `per_sm` of its CTAs share an SM (an H100's shared
    memory, CTA_RESERVED_SMEM each); with `reuse`, in as many stages with the warps' reduction in them where only that
    lets them share it. The most that fit where no count does; None where none fits."""
    cands = [c for p in counts for c in (replace(cfg, stages=p), replace(cfg, stages=p, reuse=True))
             if not c.reuse or (reuse and _stages_hold_reduction(c, fmt, M))]
    fit = [c for c in cands if cta_smem_bytes(c, fmt, M) <= smem]
    return next((c for c in fit if per_sm * (cta_smem_bytes(c, fmt, M) + CTA_RESERVED_SMEM) <= SM_SMEM),
                fit[0]) if fit else None


def grid_splits(cfg: MixedConfig, fmt: PackedFormat, M: int, K: int, N: int, sms: int, smem: int = CTA_SMEM) -> int:
    """The split-K count ``launch_grid`` would give cfg, for an occupancy estimated from shared memory and
    threads alone (the driver's, which the launch uses, also counts registers); `smem` is the GPU's per-CTA
    limit (the SM holds it and one CTA's reservation)."""
    blocks = N // (16 * cfg.tiles)
    per_sm = max(1, min((smem + CTA_RESERVED_SMEM) // (cta_smem_bytes(cfg, fmt, M) + CTA_RESERVED_SMEM),
                        2048 // cfg.threads))
    return cfg.splits or _pick_splits(blocks, K // cfg.chunk, cfg.warps, sms * per_sm, sms)


def wave_fill(cfg: MixedConfig, fmt: PackedFormat, M: int, K: int, N: int, sms: int, smem: int = CTA_SMEM) -> float:
    """How evenly cfg's grid (``grid_splits``) spreads over `sms` SMs: the mean CTAs per SM over the most any
    SM runs (1.0: all run the same count)."""
    return _fill(N // (16 * cfg.tiles) * grid_splits(cfg, fmt, M, K, N, sms, smem), sms)


def _fill(ctas: int, slots: int) -> float:
    """The share of its waves' CTA slots a grid of `ctas` uses, `slots` CTAs a wave."""
    return ctas / (-(-ctas // slots) * slots)


_WORKSPACES: dict[Any, tuple[Any, Any]] = {}


def _workspace(x: Any, elems: int, blocks: int) -> tuple[Any, Any]:
    """A zeroed fp32 workspace of at least `elems` values and `blocks` zeroed counters for x's device and
    current stream. The kernel leaves both zeroed, so they are allocated (and zeroed) once and reused;
    one per stream, since two launches in flight at once must not share them."""
    import torch
    from tilecraft.gemm.sm90 import current_stream_handle
    stream = current_stream_handle(x.device) if x.is_cuda else 0
    key = (str(x.device), stream)
    ws, cnt = _WORKSPACES.get(key, (None, None))
    if ws is None or ws.numel() < elems or cnt.numel() < blocks:
        ws = torch.zeros(max(elems, ws.numel() if ws is not None else 0), dtype=torch.float32, device=x.device)
        cnt = torch.zeros(max(blocks, cnt.numel() if cnt is not None else 0), dtype=torch.int32, device=x.device)
        if not (x.is_cuda and torch.cuda.is_current_stream_capturing()):   # made in a CUDA graph's capture: zeroed
            _WORKSPACES[key] = (ws, cnt)                         # only when it replays, so that graph's (stream_flags)
    return ws, cnt


@dataclass(frozen=True)
class MixedGemm:
    """The mixed-input GEMM for weights of one packed format: ``MixedGemm(fmt)(x, w, bias)``. A weight of
    another format (bits, group size, zero point, dtype or layout version) is refused.

    ``pdl`` (None: on sm_90 and newer GPUs): launch as programmatic dependent launches. Each kernel's CTAs
    take the SM slots its predecessor in the stream leaves, prefetch ``pdl_prefetch`` sixteenths (0..16)
    of their weights into L2 while it finishes, and wait for it before they touch x, y or the workspace;
    at most ``pdl_ctas_per_sm`` CTAs share an SM (``max_ctas_per_sm``), so they spread evenly. In back-to-
    back streams at N = K = 8192 on an H100 this took W4A16 g128 from 16.0 to 14.0 us per call at M = 1
    and from 17.4 to 14.0 at M = 8, W8A16 per-channel from 26.3 to 23.6 at M = 1 (benchmarks/RESULTS.md,
    eleventh session); a lone call runs as before."""

    format: PackedFormat
    config: MixedConfig | None = None
    pdl: bool | None = None
    pdl_prefetch: int = PDL_PREFETCH

    def __call__(self, x: Any, w: PackedWeight, bias: Any = None) -> Any:
        return cached_run(("sm80", self), x, w, bias, self._prepare)(x, w, bias)

    def _prepare(self, x: Any, w: PackedWeight, bias: Any) -> Any:
        """Check a call and return ``run(x, w, bias) -> y`` for calls of its signature (``cached_run``):
        the tiling, the splits and the bound launches of each slice of MAX_M rows are resolved here."""
        import torch
        w.check(self.format)
        fmt, K, N, want = check_operands(x, w, bias)
        x2 = x.reshape(-1, K)
        clone = x2.stride(1) != 1 or x2.data_ptr() % 16 != 0                 # 16-byte aligned rows of x
        x2 = x2.clone(memory_format=torch.contiguous_format) if clone else x2
        M, dev, out_shape = x2.shape[0], x.device, (*x.shape[:-1], N)
        y = torch.empty(M, N, dtype=want, device=dev)
        sms, cc = _sm_count(x), _device_cc(x)
        cfg = self.config or pick_mixed_config(fmt, M, K, N, sms, _smem_per_cta(x))
        cfg.validate(fmt, K, N, min(M, MAX_M))
        kcfg = replace(cfg, splits=None)                                   # splits are the grid's, not the code's
        if self.pdl not in (None, True, False):
            raise TypeError(f"MixedGemm: pdl must be None, True or False, got {self.pdl!r}")
        pdl = self.pdl if self.pdl is not None else cc >= (9, 0)
        if pdl and cc < (9, 0):
            raise ValueError("MixedGemm(pdl=True): programmatic dependent launches need an sm_90 or newer GPU")
        if not (isinstance(self.pdl_prefetch, int) and 0 <= self.pdl_prefetch <= 16):
            raise ValueError(f"MixedGemm: pdl_prefetch must be an int in 0..16 (sixteenths), got {self.pdl_prefetch!r}")
        pf = self.pdl_prefetch if pdl else None
        slices = []
        for m0 in range(0, M, MAX_M):
            xs, ys = x2[m0:m0 + MAX_M], y[m0:m0 + MAX_M]
            blocks, splits = launch_grid(xs, w, cfg, bias, ys)
            cap = pdl_ctas_per_sm(blocks * splits, sms) if pdl else None
            bound = mixed_gemm_kernel.bind(*_kernel_args(xs, w, bias, ys, cfg, splits > 1, kcfg, pf),
                                           grid=(blocks, splits), block=(cfg.threads,), pdl=pdl, max_ctas_per_sm=cap)
            slices.append((m0, bound, splits > 1))
        whole, flat, flat_y = len(slices) == 1, x.dim() == 2, len(out_shape) == 2

        def run(x: Any, w: PackedWeight, bias: Any, out: Any = None) -> Any:
            x2 = x if flat else x.reshape(-1, K)                          # (each view op costs host time)
            x2 = x2.clone(memory_format=torch.contiguous_format) if clone else x2
            y = torch.empty(M, N, dtype=want, device=dev) if out is None else out   # (out: (M, N), rows contiguous)
            for m0, bound, split_k in slices:
                xs, ys = (x2, y) if whole else (x2[m0:m0 + MAX_M], y[m0:m0 + MAX_M])
                bound(*_kernel_args(xs, w, bias, ys, cfg, split_k, kcfg, pf, views=False))
            return y if flat_y or out is not None else y.reshape(out_shape)
        run.path, run.config, run.pdl = "mixed", cfg, pdl
        return run


# (path and op, signatures of x, bias and the weight's tensors, the weight's format and shape) -> run
_RUNS: dict[Any, Any] = {}


def cached_run(tag: Any, x: Any, w: PackedWeight, bias: Any, prepare: Any) -> Any:
    """The run of a mixed-input call: from the cache when a call of the same signature (``tag``: the kernel
    and its configuration; the dtypes, shapes, strides, 16-byte alignment and devices of x, bias and the
    weight's tensors; the weight's format and shape) was prepared before, else ``prepare(x, w, bias)``."""
    from tilecraft.gemm.op import _memo
    from tilecraft.gemm.op import _signature as sig

    if not isinstance(w, PackedWeight):
        raise TypeError(f"the mixed-input GEMM takes a PackedWeight (tc.quant.pack), got {type(w).__name__}")
    key = (tag, sig(x), sig(bias), w.format, w.shape, sig(w.qweight), sig(w.scales), sig(w.zeros))
    return _memo(_RUNS, key, lambda: prepare(x, w, bias))


def check_operands(x: Any, w: PackedWeight, bias: Any) -> tuple[PackedFormat, int, int, Any]:
    """(format, K, N, torch dtype of x) after checking what both mixed-input kernels need: a PackedWeight
    of layout v1, x (..., K) in the dtype the weight was packed for, on the weight's CUDA device, bias (N,)."""
    import torch
    if not isinstance(w, PackedWeight):
        raise TypeError(f"the mixed-input GEMM takes a PackedWeight (tc.quant.pack), got {type(w).__name__}")
    fmt = w.format
    K, N = w.shape
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch tensor, got {type(x).__name__}")
    want = getattr(torch, fmt.dtype)
    if x.dtype != want:
        raise TypeError(f"x is {x.dtype} but the weight was packed for {want} activations (its scales are "
                        f"{fmt.dtype}); pack it with tc.quant.pack(qw, dtype={x.dtype})")
    if x.dim() < 1 or x.shape[-1] != K:
        raise ValueError(f"x must be (..., K) with K = {K} (the weight is ({K}, {N})), got {tuple(x.shape)}")
    _check_packed(w)
    if x.device != w.qweight.device:
        raise ValueError(f"x is on {x.device} but the weight on {w.qweight.device}")
    _check_device(x)
    if bias is not None and (not isinstance(bias, torch.Tensor) or tuple(bias.shape) != (N,)
                             or bias.dtype != want or bias.device != x.device):
        raise ValueError(f"bias must be a ({N},) {want} tensor on {x.device}")
    return fmt, K, N, want


def _check_packed(w: PackedWeight) -> None:
    """The packed tensors have the shapes, dtypes and contiguity of layout v1 for w's format."""
    import torch
    fmt, (K, N) = w.format, w.shape
    groups = K // w.group
    want = {"qweight": ((N // 16, K // k_block(fmt.bits), 32, 4), torch.int32),
            "scales": ((N // 16, groups, 8, 2), getattr(torch, fmt.dtype))}
    if fmt.zero_point:
        want["zeros"] = want["scales"]
    elif w.zeros is not None:
        raise ValueError("the weight's format has no zero points but it carries a zeros tensor")
    for name, (shape, dt) in want.items():
        t = getattr(w, name)
        if t is None or tuple(t.shape) != shape or t.dtype != dt or not t.is_contiguous():
            got = "None" if t is None else f"{t.dtype} {tuple(t.shape)}{'' if t.is_contiguous() else ' (strided)'}"
            raise ValueError(f"packed {name} must be a contiguous {dt} tensor of shape {shape} for {fmt.name}, "
                             f"got {got}")


def x_rows(M: int) -> int:
    """The rows of x an async_copy stage holds for M rows (up to MAX_M): M rounded up to a power of two,
    so that a handful of kernels serve every M."""
    return 1 << (min(M, MAX_M) - 1).bit_length()


def stage_x_rows(cfg: MixedConfig, M: int) -> int:
    """The kernel's xrows: the rows of x cfg's shared-memory stages hold (0: none, x in registers)."""
    return x_rows(M) if cfg.async_copy and not cfg.x_regs else 0


def _reduction_bytes(cfg: MixedConfig, M: int) -> int:
    """The shared memory where a CTA's warps meet at the end (fp32, BN x 8 m-blocks x warps)."""
    return 16 * cfg.tiles * 8 * _m_blocks(M) * cfg.warps * 4


def stage_smem_bytes(cfg: MixedConfig, fmt: PackedFormat, M: int = MAX_M) -> int:
    """The shared memory of cfg's stages for M rows of x (async_copy; 0 for register buffers): per warp
    and stage, each lane's 16-byte weight slots and 4-byte scale (and zero point) slots, and the chunk's
    stage_x_rows rows of x (padded by 16 bytes)."""
    if not cfg.async_copy:
        return 0
    groups = max(1, cfg.chunk // fmt.group_size) if fmt.group_size is not None else 0
    per_lane = 16 * (cfg.chunk // _k_block(fmt)) * cfg.tiles + 4 * groups * cfg.tiles * (1 + fmt.zero_point)
    return (32 * per_lane + 2 * stage_x_rows(cfg, M) * (cfg.chunk + _X_PAD)) * cfg.warps * cfg.stages


def _m_blocks(M: int) -> int:
    """The 8-row m-blocks of one launch for M rows of x (at most MAX_M rows a launch)."""
    return -(-min(M, MAX_M) // 8)


def _stages_hold_reduction(cfg: MixedConfig, fmt: Any, M: int) -> bool:
    """Whether the weights' shared-memory stages (async_copy) can hold the warps' reduction for M rows of x: their
    16-byte slots (512 bytes a warp per tile, k-block and stage) at least its BN x 8 m-blocks fp32 sums a warp (512
    bytes per tile and m-block)."""
    return cfg.async_copy and cfg.chunk // _k_block(fmt) * cfg.stages >= _m_blocks(M)


def cta_smem_bytes(cfg: MixedConfig, fmt: PackedFormat, M: int = MAX_M) -> int:
    """A CTA's shared memory for M rows of x: cfg's stages and the warps' reduction (in the stages with ``reuse``)."""
    return stage_smem_bytes(cfg, fmt, M) + (0 if cfg.reuse else _reduction_bytes(cfg, M))


def pdl_ctas_per_sm(ctas: int, sms: int) -> int:
    """The occupancy cap of a programmatic dependent launch of `ctas` CTAs: as many per SM as one wave spreads
    evenly, ceil(ctas / sms). Its CTAs are placed while the previous kernel still runs, on whatever SM has
    room; uncapped, they filled the SMs that kernel left free and stayed lopsided from kernel to kernel
    (W4A16 M = 1, N = K = 8192 on an H100: 1 to 6 CTAs per SM, the last CTA ending 6.7 us after the median
    one, against 3 to 4 and 1.2 us plainly launched; benchmarks/probe_pdl_timeline.py)."""
    return -(-ctas // sms)


def _pick_splits(blocks: int, chunks: int, warps: int, slots: int, sms: int) -> int:
    """The split-K count for `blocks` row blocks of `chunks` chunks each on `sms` SMs when `slots` CTAs fit
    the GPU at once: the fewest splits whose CTAs reach nine SMs in ten (none where the row blocks do),
    keeping every CTA in one wave and a chunk for every warp. Splitting further to shorten the busiest
    warp's share, as this did until the thirty-sixth session, lost wherever the row blocks already reached
    the SMs: W4A16 g128 at Llama-3-8B o (N = K = 4096) 5.0 us unsplit against 6.9 in three slices at M = 1,
    5.3 against 7.3 at M = 8; qkv (N = 6144) 6.3 against 8.1 at M = 1; 14336 x 4096 12.7 against 13.2;
    W8A16 per channel 7.3 against 8.7 and 20.9 against 22.0 at M = 1 (H100, PDL stream, in turn). Slicing
    still pays where half the SMs would idle: 64 blocks of four tiles (K = 14336, M = 16) 16.6 us in two
    slices against 22.5 (benchmarks/probe_small_m.py --splits)."""
    most = max(1, min(slots // blocks, chunks // warps, 64))
    return max(1, min(most, -(-(sms * 9 // 10) // blocks)))


def launch_grid(x: Any, w: PackedWeight, cfg: MixedConfig, bias: Any = None, y: Any = None) -> tuple[int, int]:
    """(row blocks, splits of K): the grid of one launch of up to MAX_M rows of x. Unless cfg fixes them,
    the splits come from ``_pick_splits`` with the CTAs of the compiled kernel one SM of x's GPU holds
    (the driver's occupancy: registers, shared memory; 3 per SM and 132 SMs off a GPU). y: the launch's
    output where the caller has it (None: a throw-away one is made to specialize the kernel)."""
    K = w.shape[0]
    blocks = w.shape[1] // (16 * cfg.tiles)
    if cfg.splits is not None:
        return blocks, cfg.splits
    per_sm = 3
    if x.is_cuda:
        import torch
        with torch.cuda.device(x.device):
            per_sm = mixed_gemm_kernel.max_active_blocks(*_kernel_args(x, w, bias, y, cfg), block=(cfg.threads,))
    sms = _sm_count(x)
    return blocks, _pick_splits(blocks, K // cfg.chunk, cfg.warps, sms * per_sm, sms)


def _device_cc(x: Any) -> tuple[int, int]:
    from tilecraft.gemm.op import _device_facts
    return _device_facts(x.device)[1] if x.is_cuda else (0, 0)


def _kernel_args(x: Any, w: PackedWeight, bias: Any, y: Any, cfg: MixedConfig, split_k: bool = True,
                 kcfg: MixedConfig | None = None, pdl: int | None = None, views: bool = True) -> tuple:
    """mixed_gemm_kernel's arguments (y None: one is made, for compiling only); the workspace and counters
    of this device and stream, or None without split-K. kcfg: cfg without its splits (the kernel's
    Constexpr), where the caller has it; pdl: the kernel's prefetch_pdl (a programmatic dependent launch) or
    None. ``views=False``: the workspace and counters whole rather than as the kernel's (M, N) and (blocks,)
    views, for a bound launch (which reads only their addresses, the same)."""
    import torch
    M, N = x.shape[0], w.shape[1]
    if y is None:
        y = torch.empty(M, N, dtype=x.dtype, device=x.device)
    blocks = N // (16 * cfg.tiles)
    ws, cnt = _workspace(x, M * N, blocks) if split_k else (None, None)
    kcfg = kcfg or replace(cfg, splits=None)                              # splits are the grid's, not the code's
    if split_k and views:
        ws, cnt = ws[:M * N].view(M, N), cnt[:blocks]
    return (x, w.qweight, w.scales, w.zeros, bias, y, ws, cnt, w.format, kcfg, -(-M // 8), stage_x_rows(cfg, M), pdl)


def mixed_gemm(x: Any, w: PackedWeight, bias: Any = None, *, config: Any = None) -> Any:
    """y (..., N) = x (..., K) @ dequantize(w) (+ bias): x float16 / bfloat16 (the dtype w was packed for),
    w a ``tilecraft.quant.PackedWeight`` of W (K, N), bias (N) or None; y has x's dtype. On an sm_90 GPU
    from ``sm90_mixed.SM90_MIN_M`` rows on, a Hopper kernel runs (TMA + wgmma: the register-A kernel of
    tilecraft/gemm/sm90_mixed_rs.py, whose consumers dequantize W in registers as wgmma's A operand; a
    ragged M past 512 may run in two launches, ``sm90_mixed_rs.split_rows``); otherwise this module's kernel,
    rows of x beyond 32 at a time. ``config``: a MixedConfig (this kernel's tiling, and ``config.splits`` its
    split-K slices), or an ``RsConfig`` or ``Sm90MixedConfig`` (a Hopper kernel at any M: the register-A one,
    or sm90_mixed.py's, which dequantizes W into shared memory).
    The decision and the path's plan are kept per call signature (``_CALLS``: the signatures of x, bias and the
    weight's tensors, its format and shape, config; ``tc.gemm.clear_plans()`` forgets them)."""
    from tilecraft.gemm.op import _memo
    from tilecraft.gemm.op import _signature as sig

    if not isinstance(w, PackedWeight):
        raise TypeError(f"the mixed-input GEMM takes a PackedWeight (tc.quant.pack), got {type(w).__name__}")
    key = (sig(x), sig(bias), w.format, w.shape, sig(w.qweight), sig(w.scales), sig(w.zeros), config)
    try:
        run = _CALLS.get(key)
    except TypeError:                                                     # an unhashable config: the checks say why
        return _plan(x, w, bias, config)(x, w, bias)
    if run is None:
        run = _memo(_CALLS, key, lambda: _plan(x, w, bias, config))
    return run(x, w, bias)


# (signatures of x, bias and the weight's tensors, the weight's format and shape, config) -> the call's run
_CALLS: dict[Any, Any] = {}


def _plan(x: Any, w: PackedWeight, bias: Any, config: Any) -> Any:
    """mixed_gemm's decision for a call: the run of its path (``cached_run``'s, which the path prepares)."""
    from tilecraft.gemm import sm90_mixed

    if config is not None:
        from tilecraft.gemm.sm90_mixed_rs import RsConfig
        if isinstance(config, (sm90_mixed.Sm90MixedConfig, RsConfig)):
            return sm90_mixed.sm90_mixed_run(x, w, bias, config)
        if not isinstance(config, MixedConfig):
            raise TypeError(f"config must be a MixedConfig, an RsConfig or an Sm90MixedConfig, got "
                            f"{type(config).__name__}")
    elif sm90_mixed.use_sm90_mixed(x, w):
        return sm90_mixed.sm90_mixed_run(x, w, bias)
    op = MixedGemm(w.format, config)
    return cached_run(("sm80", op), x, w, bias, op._prepare)
