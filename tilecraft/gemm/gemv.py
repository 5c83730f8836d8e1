"""The GEMV in the kernel language: C = alpha * A @ B + beta * C for a few rows of A (M <= 16), IEEE fp32 FFMA.
Operands are fp32, or float16 / bfloat16 (tc.gemm's path for up to 2 rows: decoding without quantized weights),
whose products are summed in fp32 like fp32's and whose C is rounded once.

At M = 1..16 the SIMT SGEMM's 64-row tiles waste most of their FFMAs and its K-split partial sums cost as much as
the product (H100, thirty-ninth session: 0.42x cuBLAS at 1x4096x4096 and 32x4096x11008). What such a call costs
is B's bytes: every element of B is read once and used M times, so the kernel must keep enough of B in flight on
every SM to stream it at the memory's bandwidth, and everything else (A, the sums) must stay off that path.

* **A off the path.** A CTA works on one k-range of its split (blockIdx.y) and first copies A's rows
  (ROWS, its k-range) into shared memory, zeros past M and past the range; the main loop then reads A with
  128-bit shared loads. (Up to 4 rows of an N-contiguous B it reads A from global memory in each step instead,
  L1 serving the CTA's warps: no barrier before the first loads of B.)
Widths below are fp32's; a 16-bit B's 128-bit loads hold 8 elements (``vec``), and an N-contiguous one's lanes then
take 8 columns (4 at 16 rows, whose 16 sums per column would take too many registers).

* **B N-contiguous** (torch's row-major (K, N) weight, ``x @ W``): a warp's lanes hold 4 adjacent columns each
  (128 columns a CTA), the CTA's warps take turns along k four rows at a time (a step: four 128-bit loads of
  B per lane, a broadcast 128-bit read of each A row), and at the end they add their sums up through shared
  memory, ROWS_GROUP rows at a time.
* **B K-contiguous** (an nn.Linear weight (N, K), ``x @ W.T``): a warp takes COLS columns and its lanes split
  k, 4 elements each (a step: one 128-bit load per column and lane, one 128-bit read per A row); the lanes'
  sums meet in a reduce-scatter of warp shuffles (``dsl.shfl_xor``, ``_scatter_reduce``).
* **Split-K in one kernel.** Where the columns alone give too few warps to stream B on every SM, blockIdx.y
  splits K. Each split stores its partial sums into an fp32 workspace (S, M, N) and counts itself in at its
  column block's counter (``dsl.arrive_last``); the last one adds the partials up in split order (the same
  result at every run) and writes C with alpha and beta. No second kernel: at these sizes its launch alone
  would cost about a tenth of the time.

Loads of B never leave B: a thread past N reads the last column instead (its sums are not stored), and the last
step of a k-range is predicated (zeros past it), so an inf or NaN in B reaches exactly the outputs it should.
Vector loads (``vec`` 4) need B's contiguous extent and other stride to be multiples of 4 and its pointer
16-byte aligned (the host checks); otherwise the same kernel is traced with ``vec`` 1.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tilecraft as tc
from tilecraft import _, dsl
from tilecraft.dsl import Constexpr, blockIdx, threadIdx
from tilecraft.dsl.expr import make
from tilecraft.gemm.sm90 import stream_flags, stream_workspace
from tilecraft.layout.inttuple import imin

__all__ = ["SgemvConfig", "sgemv_kernel", "sgemv", "pick_sgemv", "MAX_ROWS", "b_vectorizable"]

#: the most rows of A (M) the GEMV takes; more go to the SGEMM
MAX_ROWS = 16
#: the most shared memory a tiling may take: what every sm_80+ GPU lets a CTA opt into (99 KB on sm_86 / sm_89;
#: more than 48 KB moves the kernel's arrays to dynamic shared memory)
SMEM_MAX = 99 * 1024
STEP_ROWS = 4   # N-contiguous B: k-rows a warp loads per step


@dataclass(frozen=True)
class SgemvConfig:
    """One tiling of sgemv_kernel.

    rows: accumulator rows (M <= rows); k_slice: the longest k-range a CTA takes (A's slice in shared memory is
    rows x k_slice floats); warps per CTA; vec: B's elements per load along its contiguous mode (1, 2, 4 or 8, at
    most 16 bytes: 4 for fp32, 8 for a 16-bit B's 128-bit loads); cols
    (K-contiguous B): columns per warp; unroll: main-loop steps unrolled; rows_group (N-contiguous B): rows
    reduced across the warps per round of the final reduction; min_blocks: CTAs per SM the launch bound asks
    ptxas to fit (its register budget); scatter (K-contiguous B, cols a power of two): the lanes' sums meet in a
    reduce-scatter of shuffles (``_scatter_reduce``) rather than a butterfly per output; a_smem (N-contiguous B):
    A's slice staged in shared memory, else read from global memory (L1) in each step, with no barrier before the
    first loads of B."""

    rows: int
    k_slice: int
    warps: int = 8
    vec: int = 4
    cols: int = 4
    unroll: int = 4
    rows_group: int = 4
    min_blocks: int = 1
    scatter: bool = True
    a_smem: bool = True

    @property
    def threads(self) -> int:
        return 32 * self.warps

    def columns(self, n_major: bool) -> int:
        """Columns of C a CTA covers."""
        return 32 * self.vec if n_major else self.warps * self.cols

    def k_granule(self, n_major: bool) -> int:
        """A split's k-range is a multiple of this (the last one excepted)."""
        return STEP_ROWS if n_major else self.vec

    def min_k_slice(self, n_major: bool) -> int:
        """The least k_slice: a K-contiguous B's warps read A's slice a whole step (32 x vec of K) at a time."""
        return STEP_ROWS if n_major else 32 * self.vec

    def smem_bytes(self, n_major: bool) -> int:
        red = self.warps * min(self.rows, self.rows_group) * self.columns(True) if n_major else 0
        return 4 * (self.rows * self.k_slice * (self.a_smem or not n_major) + red)

    def validate(self, n_major: bool | None = None, elem_bytes: int = 4) -> None:
        """Raise ValueError for a tiling the kernel cannot run: for a B of the given major (None: either) and
        element size."""
        if self.rows not in (1, 2, 4, 8, 16):
            raise ValueError(f"SgemvConfig: rows must be 1, 2, 4, 8 or 16, got {self.rows}")
        if self.vec not in (1, 2, 4, 8) or self.vec * elem_bytes > 16:
            raise ValueError(f"SgemvConfig: vec must be 1, 2, 4 or 8 elements of at most 16 bytes, got {self.vec} of "
                             f"{elem_bytes} bytes")
        if self.k_slice < 4 or self.k_slice & (self.k_slice - 1):
            raise ValueError(f"SgemvConfig: k_slice must be a power of two >= 4, got {self.k_slice}")
        if not 1 <= self.warps <= 32 or not 1 <= self.cols <= 8 or not 1 <= self.unroll <= 16:
            raise ValueError(f"SgemvConfig: warps 1..32, cols 1..8, unroll 1..16; got {self}")
        if not 1 <= self.min_blocks <= 8:
            raise ValueError(f"SgemvConfig: min_blocks must be 1..8, got {self.min_blocks}")
        if self.rows_group not in (1, 2, 4, 8, 16):
            raise ValueError(f"SgemvConfig: rows_group must be a power of two <= 16, got {self.rows_group}")
        for major in (True, False) if n_major is None else (n_major,):
            if self.smem_bytes(major) > SMEM_MAX:
                raise ValueError(f"SgemvConfig: {self} needs {self.smem_bytes(major)} bytes of shared memory for a "
                                 f"{'N' if major else 'K'}-contiguous B ({SMEM_MAX} at most)")


@dsl.kernel
def sgemv_kernel(A, B, C, alpha, beta, P, counters, cfg: Constexpr, splits: Constexpr = 1, bias=None,
                 bias_along: Constexpr = "none", act: Constexpr = "none"):
    """C (M,N) = act(alpha * A (M,K) @ B^T + beta * C + bias) with B given as (N,K) and M <= cfg.rows; see the module
    docstring. ``bias_along`` "n" adds bias(n) to column n, "m" bias(m) to row m ("none": no bias); ``act`` is one of
    tensorop's ACTIVATIONS, in fp32 before C is rounded.

    ``splits`` > 1: blockIdx.y is the split (the host makes sure none is empty); each stores its partial sums into
    P(split) of the fp32 workspace P (SPLITS,M,N) and counts itself in at counters(blockIdx.x) (int32, zero before
    the launch and after it); the last split of a column block adds the partials up in split order (the same sum
    at every run) and writes C. P and counters are None without splits."""
    W, R, KS, V = cfg.warps, cfg.rows, cfg.k_slice, cfg.vec
    threads = 32 * W
    b_type, a_type = B.engine.dtype, A.engine.dtype                       # fp32, or 16-bit (summed in fp32)
    dsl.launch_bounds(threads, cfg.min_blocks)
    M, K = A.shape
    N = B.shape[0]
    n_major = B.stride[0] == 1 and isinstance(B.stride[0], int)
    dsl.assume(KS >= cfg.min_k_slice(n_major), "k_slice must hold a whole step of every warp (min_k_slice)")
    warp, lane = threadIdx.x // 32, threadIdx.x % 32

    # this CTA's k-range [k_lo, k_hi): splits of ceil(K / splits) rounded up to the step's granule
    g = cfg.k_granule(n_major)
    per = tc.ceil_div(tc.ceil_div(K, g), splits) * g
    k_lo = blockIdx.y * per if splits > 1 else 0
    k_hi = imin(K, k_lo + per) if splits > 1 else K
    k_len = k_hi - k_lo

    # A's rows over the k-range -> shared memory, zeros past M and past the range (an N-contiguous B may instead
    # read A from global memory in its steps: ``a_smem`` off)
    a_smem = cfg.a_smem or not n_major
    if a_smem:
        sA = dsl.smem_tensor(dsl.float32, tc.make_layout((R, KS), tc.LayoutRight))  # (ROWS,K_SLICE)
        for i in dsl.range(threadIdx.x, R * KS, threads):
            m, kk = i // KS, i % KS
            sA[m, kk] = dsl.read_if((m < M) & (kk < k_len), A, (m, k_lo + kk), 0.0)
        dsl.syncthreads()

    def epilogue(x: Any, m: Any, n: Any) -> Any:
        """act(x + the bias of (m,n)) in fp32."""
        if bias_along != "none":
            x = x + bias(n if bias_along == "n" else m)
        return x if act == "none" else make("call", (f"tc::{act}", x), "float")

    def store(m: Any, n: Any, total: Any) -> None:
        """C(m,n) = act(alpha * total + beta * C(m,n) + bias) inside (M,N); C is not read when beta is 0."""
        with dsl.if_((m < M) & (n < N)):
            with dsl.if_(dsl.eq(beta, 0.0)):
                C[m, n] = epilogue(alpha * total, m, n)
            with dsl.else_():
                C[m, n] = epilogue(alpha * total + beta * C(m, n), m, n)

    def finish(m: Any, n: Any, total: Any) -> None:
        """This CTA's sum for C(m,n): stored, or with splits its split's partial into P."""
        if splits == 1:
            store(m, n, total)
        else:
            with dsl.if_((m < M) & (n < N)):
                P[blockIdx.y, m, n] = total

    acc = dsl.make_rmem_tensor(dsl.float32, (R, cfg.cols if not n_major else V))
    dsl.clear(acc)
    if n_major:
        #
        # B N-contiguous: lanes along n (V columns each), warps take turns along k, STEP_ROWS rows a step
        #
        BN = 32 * V
        n0 = blockIdx.x * BN + lane * V
        n_ld = imin(n0, N - V)                                            # past N: the last columns, not stored
        rB = dsl.make_rmem_tensor(b_type, tc.make_layout((STEP_ROWS, V), tc.LayoutRight))      # (STEP,V)
        rA = dsl.make_rmem_tensor(dsl.float32 if a_smem else a_type, tc.make_layout((R, STEP_ROWS), tc.LayoutRight))

        def step(s: Any, last: bool) -> None:
            """k-rows k_lo + 4s .. +3: B's (STEP, V) and A's (ROWS, STEP), then the FFMAs."""
            for r in range(STEP_ROWS):
                k = k_lo + s * STEP_ROWS + r
                src = tc.local_tile(B(_, k), (V,), (n_ld // V,))           # (V,) columns n_ld..
                _load(src, rB(r, _), k < k_hi if last else None)
            for m in range(R):
                if a_smem:
                    dsl.copy(tc.local_tile(sA(m, _), (STEP_ROWS,), (s,)), rA(m, _))
                    continue
                a_row = A(imin(m, M - 1), _)                              # (K,) rows past M: row M-1, not stored
                if last:
                    for r in range(STEP_ROWS):
                        k = k_lo + s * STEP_ROWS + r
                        rA[m, r] = dsl.read_if(k < k_hi, a_row, k, 0.0)
                else:
                    dsl.copy(tc.local_tile(a_row, (STEP_ROWS,), ((k_lo + s * STEP_ROWS) // STEP_ROWS,)), rA(m, _))
            for m in range(R):
                for r in range(STEP_ROWS):
                    for v in range(V):
                        acc[m, v] = acc(m, v) + rA(m, r) * rB(r, v)

        full = k_len // STEP_ROWS
        for s in dsl.range(warp, full, W, unroll=cfg.unroll):
            step(s, False)
        with dsl.if_((k_len % STEP_ROWS > 0) & dsl.eq(warp, full % W)):
            step(full, True)

        # the warps' sums -> shared memory, RG rows a round; each thread then adds one output's W sums
        RG = min(R, cfg.rows_group)
        red = dsl.smem_tensor(dsl.float32, tc.make_layout((BN, RG, W)))  # (BN,RG,W) n-contiguous
        outputs = RG * BN
        for rnd in range(R // RG):
            if rnd:
                dsl.syncthreads()                                         # the previous round's sums are read
            for mm in range(RG):
                dsl.copy(acc(rnd * RG + mm, _), tc.local_tile(red(_, mm, warp), (V,), (lane,)))
            dsl.syncthreads()
            for j in range(tc.ceil_div(outputs, threads)):
                o = threadIdx.x + j * threads
                col, mm = o % BN, o // BN
                with dsl.if_(o < outputs):
                    total = red(col, mm, 0)
                    for w in range(1, W):
                        total = total + red(col, mm, w)
                    finish(rnd * RG + mm, blockIdx.x * BN + col, total)
    else:
        #
        # B K-contiguous: a warp takes COLS columns, its lanes split k (V elements each); their sums meet in shuffles
        #
        COLS = cfg.cols
        n_base = blockIdx.x * (W * COLS) + warp * COLS
        rB = dsl.make_rmem_tensor(b_type, tc.make_layout((COLS, V), tc.LayoutRight))       # (COLS,V)
        rA = dsl.make_rmem_tensor(dsl.float32, tc.make_layout((R, V), tc.LayoutRight))     # (ROWS,V)
        rows_b = [B(imin(n_base + c, N - 1), _) for c in range(COLS)]     # (K,) past N: the last column

        def step(kk: Any, last: bool) -> None:
            """k elements k_lo + kk .. + V - 1 of each column and A row, then the FFMAs."""
            for c in range(COLS):
                src = tc.local_tile(rows_b[c], (V,), ((k_lo + kk) // V,))
                _load(src, rB(c, _), kk < k_len if last else None)
            for m in range(R):
                dsl.copy(tc.local_tile(sA(m, _), (V,), (kk // V,)), rA(m, _))
            for m in range(R):
                for c in range(COLS):
                    for v in range(V):
                        acc[m, c] = acc(m, c) + rA(m, v) * rB(c, v)

        span = 32 * V                                                     # k elements a warp takes per step
        full = k_len // span
        for s in dsl.range(full, unroll=cfg.unroll):
            step(s * span + lane * V, False)
        with dsl.if_(k_len % span > 0):
            step(full * span + lane * V, True)

        if cfg.scatter and COLS & (COLS - 1) == 0:
            _scatter_reduce([acc(m, c) for m in range(R) for c in range(COLS)], lane,
                            lambda j, total: finish(j // COLS, n_base + j % COLS, total))
        else:
            for m in range(R):
                for c in range(COLS):
                    total = acc(m, c)
                    for mask in (16, 8, 4, 2, 1):
                        total = total + dsl.shfl_xor(total, mask)
                    with dsl.if_(dsl.eq(lane, (m * COLS + c) % 32)):
                        finish(m, n_base + c, total)

    if splits > 1:
        #
        # The last split of this column block adds the partials up, in split order, and writes C
        #
        BNC = cfg.columns(n_major)
        with dsl.if_(dsl.arrive_last(counters, blockIdx.x, splits)):
            part = dsl.make_rmem_tensor(dsl.float32, 1)
            for j in range(tc.ceil_div(R * BNC, threads)):
                o = threadIdx.x + j * threads
                m, n = o // BNC, blockIdx.x * BNC + o % BNC
                with dsl.if_((o < R * BNC) & (m < M) & (n < N)):
                    part[0] = dsl.load_cg(P, (0, m, n))
                    for sp in dsl.range(1, splits):
                        part[0] = part(0) + dsl.load_cg(P, (sp, m, n))
                    store(m, n, part(0))


def _load(src: Any, dst: Any, inside: Any = None) -> None:
    """dst = src; with a condition `inside` (a range's last step), src where it holds and zeros where not."""
    if inside is None:
        dsl.copy(src, dst)
        return
    with dsl.if_(inside):
        dsl.copy(src, dst)
    with dsl.else_():
        dsl.clear(dst)


def _scatter_reduce(values: list, lane: Any, done: Any) -> None:
    """The warp's sums of V = len(values) (a power of two) per-lane values, each finished by exactly one lane:
    done(j, sum over lanes of values[j]) with j a runtime index. A reduce-scatter: at each of the five lane masks
    (16 .. 1) a lane keeps half of what it still holds (the upper half where its mask bit is set), sends the other
    half to its partner and adds the partner's half of the same indices. After log2(V) masks each lane holds
    max(1, V / 32) whole sums; where V < 32 the last masks add the single value butterfly-wise and the lanes with
    those bits clear finish it. V - 1 + 5 shuffles at V <= 32 (V / 32 * 31 + ... above) instead of 5 V."""
    count, base, dup = len(values), 0, 0
    for mask in (16, 8, 4, 2, 1):
        if count > 1:
            half = count // 2
            up = dsl.declare(dsl.ne(lane & mask, 0), "up")
            kept = []
            for i in range(half):
                send = dsl.declare(dsl.where(up, values[i], values[i + half]), "send")
                keep = dsl.where(up, values[i + half], values[i])
                kept.append(dsl.declare(keep + dsl.shfl_xor(send, mask), "part"))
            values, count = kept, half
            base = dsl.declare(base + dsl.where(up, half, 0), "base")
        else:
            values = [dsl.declare(values[0] + dsl.shfl_xor(values[0], mask), "part")]
            dup |= mask
    with dsl.if_(dsl.eq(lane & dup, 0)) if dup else _nothing():
        for i in range(count):
            done(base + i, values[i])


class _nothing:
    """A ``with`` block that opens nothing (no condition to test)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


# ----------------------------------------------------------------------------- host side

def b_vectorizable(Bt: Any, vec: int | None = None) -> bool:
    """B given as (N, K) can be read `vec` elements at a time (None: 16 bytes' worth, 4 floats or 8 16-bit ones)
    along its contiguous mode: that mode's extent and the other stride multiples of vec, the pointer aligned to vec
    elements."""
    vec = 16 // Bt.element_size() if vec is None else vec
    s, shape = Bt.stride(), Bt.shape
    unit = 0 if s[0] == 1 else 1 if s[1] == 1 else None
    if unit is None:
        return False
    other = s[1 - unit] if shape[1 - unit] > 1 else 0
    return Bt.data_ptr() % (vec * Bt.element_size()) == 0 and shape[unit] % vec == 0 and other % vec == 0


#: the shared-memory bytes A's slice may take (rows x k_slice floats)
A_SLICE_BYTES = 32 * 1024
#: CTAs per SM the split count aims for, by B's major (K-contiguous, N-contiguous). H100, N-contiguous B, x cuBLAS with
#: 16 / 8 splits: 1x4096x4096 0.96 / 0.96, 1x4096x11008 0.99 / 1.01, 2x4096x4096 2.31 / 2.41
CTAS_PER_SM = {False: 4, True: 2}
#: the least of K a split takes (by B's major: K-contiguous, N-contiguous): a warp's step covers 128 of K
#: (K-contiguous), a CTA's 8 warps 32 (N-contiguous); fewer would leave the steps' loads too few per warp
MIN_SPLIT_K = {False: 512, True: 256}


def pick_sgemv(M: int, N: int, K: int, n_major: bool, vec: int, sms: int) -> tuple[SgemvConfig, int]:
    """(tiling, splits) for a GEMV of M <= MAX_ROWS rows whose B can be read `vec` elements at a time (4 or 1 for
    fp32, 8 or 1 for a 16-bit B; an N-contiguous B's lanes then take at most 64 // rows columns, whose sums each
    lane holds for every row): rows the next power of two of M; splits so that the
    column blocks times the splits give about CTAS_PER_SM CTAs per SM (counting the columns of 8-warp CTAs, also
    where the tiling then takes 16), and at least so many that each split's k-range fits A's shared-memory slice
    (A_SLICE_BYTES), each of at least MIN_SPLIT_K of K where it fits."""
    rows = 1 << max(0, M - 1).bit_length()
    vec = min(vec, 64 // rows) if n_major else vec
    base = SgemvConfig(rows=rows, k_slice=4, vec=vec)
    blocks = -(-N // base.columns(n_major))
    g = base.k_granule(n_major)
    units = -(-K // g)                                                    # k granules
    ks_max = A_SLICE_BYTES // (4 * rows)
    splits = max(1, round(CTAS_PER_SM[n_major] * sms / blocks), -(-K // ks_max))
    splits = min(splits, max(1, units // (MIN_SPLIT_K[n_major] // g)))  # each split at least MIN_SPLIT_K
    splits = max(splits, -(-K // ks_max))
    per_units = -(-units // splits) if units else 0
    splits = -(-units // per_units) if per_units else 1                   # none empty
    per = per_units * g
    k_slice = max(base.min_k_slice(n_major), 1 << max(0, per - 1).bit_length())
    # unroll: an N-contiguous B's step is already 4 rows (H100, 1..8 x 4096 x 4096: 2, 4 and 8 within 3%; 4 made
    # ptxas spill 4-8 bytes at rows 2 and 4); a K-contiguous one's 4, or 8 for scalar loads (2 spilled at rows 16).
    # From 8 rows on (16 for an N-contiguous B) the registers would leave one CTA per SM: two, with unroll 1 (H100,
    # x cuBLAS, the former / this: 16x4096x4096 K-contiguous 0.78 / 1.02, N-contiguous 1.51 / 1.85; 12x4096x4096
    # 0.80 / 1.04, 0.96 / 1.17; 8x11008x4096 K-contiguous 1.04 / 1.22; 16x4096x11008 0.59 / 0.89, 1.06 / 1.27)
    # At 8 rows of a K-contiguous B, 16 warps a CTA instead (8x4096x4096 1.26 / 1.36, 8x11008x4096 1.21 / 1.23).
    unroll, min_blocks, warps = (2 if n_major else 4 if vec >= 4 else 8), 1, 8
    if vec == 8 and not n_major and rows >= 2:
        # a 16-bit K-contiguous B's 128-bit loads hold twice the k of fp32's: unroll 2 from 2 rows (H100, bf16,
        # x cuBLAS, unroll 4 / 2: 4x4096x4096 0.70 / 0.84; at 1 row 4 stays: 1x14336x4096 0.97 / 0.92, 1x4096x14336
        # 0.97 / 0.95)
        unroll = 2
    if rows >= (16 if n_major else 8):
        unroll, min_blocks = 1, 2
    if rows == 8 and not n_major:
        min_blocks, warps = 1, 16
    # Up to 4 rows of an N-contiguous B, A from global memory in each step (no barrier before B's first loads; more
    # rows take too many registers): 1x4096x4096 0.965 / 0.987, 4x4096x4096 2.34 / 2.39, 1x1000x1000 1.66 / 1.79.
    a_smem = not (n_major and rows <= 4)
    return SgemvConfig(rows=rows, k_slice=k_slice, vec=vec, unroll=unroll, min_blocks=min_blocks, warps=warps,
                       a_smem=a_smem), splits


def sgemv(A: Any, B: Any, C: Any = None, alpha: float = 1.0, beta: float = 0.0,
          config: SgemvConfig | None = None, splits: int | None = None, bias: Any = None,
          activation: str | None = None, bias_along: str = "n") -> Any:
    """C = act(alpha * A @ B + beta * C + bias) for M <= MAX_ROWS rows of A with the GEMV kernel; returns C (new when
    C is None).

    A (M,K), B (K,N), C (M,N): CUDA tensors of one dtype on one device, any strides: float32, or float16 / bfloat16
    (products summed in fp32, C rounded once). ``bias``: a 1-D float32 / float16 / bfloat16 tensor of N values (one
    per column, ``bias_along`` "n") or M (one per row, "m"); ``activation``: None or one of "relu", "gelu", "silu"
    (tensorop's ACTIVATIONS), in fp32. ``config`` / ``splits`` None pick (``pick_sgemv``); an explicit config must
    have rows >= M and a k_slice that holds each split's k-range, and its vec is lowered to 1 where B cannot be read
    vec elements at a time. As in BLAS, C is not read when beta is 0.

    The checks, the pick and the launch are resolved once per call signature (dtypes, shapes, strides, 16-byte
    alignment and devices of A, B, C and the bias, config, splits, activation; ``tc.gemm.clear_plans()`` forgets
    them): a repeated call costs the allocations and the launch."""
    return gemv_plan(A, B, C, config, splits, bias, activation, bias_along).run(A, B, C, alpha, beta, bias)


def gemv_plan(A: Any, B: Any, C: Any = None, config: SgemvConfig | None = None, splits: int | None = None,
              bias: Any = None, activation: str | None = None, bias_along: str = "n") -> _GemvPlan:
    """sgemv's resolved call for this signature (see sgemv), made once: ``.run(A, B, C, alpha, beta, bias)`` runs
    calls of it (tc.gemm keeps it for its own signature's calls)."""
    from tilecraft.gemm.op import _memo, _signature

    key = (_signature(A), _signature(B), _signature(C), config, splits, _signature(bias), activation,
           bias_along if bias is not None else None)
    return _memo(_PLANS, key, lambda: _GemvPlan(A, B, C, config, splits, bias, activation, bias_along))


def _as_nk(B: Any) -> Any:
    """B (K,N) as the kernel takes it, (N,K). A single column (N = 1) contiguous along K reads as K-contiguous: its
    unit stride along N, which the kernel would take for an N-contiguous B, is any stride for an extent of 1."""
    Bt = B.t()
    if Bt.shape[0] == 1 and Bt.stride(1) == 1 and Bt.stride(0) == 1:
        Bt = Bt.as_strided(Bt.shape, (max(Bt.shape[1], 2), 1))
    return Bt


#: sgemv's resolved calls, by signature (see sgemv)
_PLANS: dict[Any, Any] = {}


class _GemvPlan:
    """One signature's call of sgemv, checked and picked once: the output's shape, the partials' shape with split-K
    (else None), the column blocks, the bound launch (None when M or N is 0) and the Constexpr arguments it is called
    with before the bias."""

    def __init__(self, A: Any, B: Any, C: Any, config: SgemvConfig | None, splits: int | None, bias: Any = None,
                 activation: str | None = None, bias_along: str = "n"):
        import numpy as np
        import torch

        from tilecraft.gemm.simt import check_sgemm_operands
        from tilecraft.gemm.tensorop import ACTIVATIONS

        half = isinstance(A, torch.Tensor) and A.dtype in (torch.float16, torch.bfloat16)
        M, N, K, C, beta = check_sgemm_operands(A, B, C, 0.0, "sgemv", A.dtype if half else None)
        if M > MAX_ROWS:
            raise ValueError(f"sgemv: A has {M} rows; the GEMV takes at most {MAX_ROWS} (use sgemm_tuned)")
        if splits is not None and (isinstance(splits, bool) or not isinstance(splits, int) or splits < 1):
            raise ValueError(f"sgemv: splits must be an int >= 1, got {splits!r}")
        act = activation or "none"
        if act not in ACTIVATIONS:
            raise ValueError(f"sgemv: activation must be None or one of {ACTIVATIONS[1:]}, got {activation!r}")
        along = "none" if bias is None else bias_along
        if bias is not None:
            if bias_along not in ("n", "m"):
                raise ValueError(f"sgemv: bias_along must be 'n' or 'm', got {bias_along!r}")
            n = N if bias_along == "n" else M
            if not isinstance(bias, torch.Tensor) or bias.dim() != 1 or bias.shape[0] != n \
                    or bias.dtype not in (torch.float32, torch.float16, torch.bfloat16) or bias.device != A.device:
                raise ValueError(f"sgemv: bias must be a 1-D float32 / float16 / bfloat16 tensor of {n} values on "
                                 f"{A.device} (bias_along={bias_along!r}), got "
                                 f"{tuple(bias.shape) if isinstance(bias, torch.Tensor) else type(bias).__name__}")
        self.shape, self.partials, self.blocks, self.launch, self.f32 = (M, N), None, 0, None, torch.float32
        self.device, self.dtype, self._partials = A.device, A.dtype, {}   # (_partials: per stream, see run)
        self.constants: tuple[Any, ...] = ()
        if M == 0 or N == 0:
            return
        Bt = _as_nk(B)                                                    # the kernel takes B as (N,K)
        n_major = Bt.stride(0) == 1
        if config is None:
            from tilecraft.gemm.op import _device_facts
            vec = 16 // Bt.element_size() if b_vectorizable(Bt) else 1
            cfg, picked = pick_sgemv(M, N, K, n_major, vec, _device_facts(A.device)[0])
            splits = picked if splits is None else splits
        else:
            cfg = config if b_vectorizable(Bt, config.vec) else SgemvConfig(**{**config.__dict__, "vec": 1})
            splits = splits or 1
        cfg.validate(n_major, Bt.element_size())
        if cfg.rows < M:
            raise ValueError(f"sgemv: {cfg} has {cfg.rows} rows, A has {M}")
        g = cfg.k_granule(n_major)
        units = -(-K // g)
        per = -(-units // splits) * g if units else 0
        splits = -(-units // (per // g)) if per else 1                    # none empty
        if per > cfg.k_slice:
            raise ValueError(f"sgemv: a split of {per} of K does not fit the k_slice of {cfg} (use more splits)")
        if cfg.k_slice < cfg.min_k_slice(n_major):
            raise ValueError(f"sgemv: {cfg} needs a k_slice of at least {cfg.min_k_slice(n_major)} for this B")
        if splits * M * N >= 2**31:
            raise ValueError(f"sgemv: {splits} splits of a {M} x {N} output make a workspace of {splits * M * N} "
                             "floats; 32-bit offsets allow fewer than 2**31 (use fewer splits)")
        self.blocks = -(-N // cfg.columns(n_major))
        P = counters = None
        if splits > 1:
            self.partials = (splits, M, N)
            P = torch.empty(self.partials, dtype=torch.float32, device=A.device)
            counters = _counters(A.device, self.blocks)
        self.constants = (cfg, splits)
        self.launch = sgemv_kernel.bind(A, Bt, C, np.float32(1.0), np.float32(beta), P, counters, cfg, splits, bias,
                                        along, act, grid=(self.blocks, splits), block=(cfg.threads,))

    def run(self, A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any) -> Any:
        """C = act(alpha * A @ B + beta * C + bias) for operands of this plan's signature; a new C when C is None. B
        goes to the launch as it is: the bound launch reads only its address (the kernel's (N,K) view of B, which
        ``_as_nk`` makes, has B's), as it does of the others. The split partials are a per-stream buffer
        (``sm90.stream_workspace``: nothing in it outlives a launch)."""
        import torch

        if C is None:
            C, beta = torch.empty(self.shape, dtype=self.dtype, device=self.device), 0.0
        if self.launch is not None:
            P = counters = None
            if self.partials:
                P = stream_workspace(self._partials, self.partials, self.f32, self.device)
                counters = _counters(self.device, self.blocks)
            self.launch(A, B, C, float(alpha), float(beta), P, counters, *self.constants, bias)
        return C


#: sgemv's split counters: count -> stream -> counters (``sm90.stream_flags``)
_COUNTERS: dict[int, dict[int, Any]] = {}


def _counters(device: Any, count: int) -> Any:
    """`count` int32 split counters for the current stream on device (``sm90.stream_flags``: zeros made once per
    stream, left at 0 by every launch; a CUDA graph's capture gets its own), one set per count."""
    return stream_flags(_COUNTERS.setdefault(count, {}), count, device)
