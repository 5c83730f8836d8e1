#!/usr/bin/env python
"""Issue 7: the ceiling of ``mma.sync`` on this GPU. How many TFLOP/s can m16n8k16 (f32 accumulators) reach,
sustained, with nothing else in the loop, and what does each thing the GEMM adds cost in speed and in joules?

    PYTHONPATH=$PWD python3 benchmarks/probe_mma_ceiling.py [--dtypes float16,bfloat16] [--sustain 3]

The kernels keep the sm80 GEMM's (``256x128x64_w4x2``) shape of work: one CTA of 8 warps per SM, each warp
a 64x64 tile of 4 x 8 m16n8k16 accumulators (128 fp32 registers per thread), n serpentine so that
consecutive instructions share A (the reuse cache), every operand random (randn bits, never zeros):

* ``regs``: the fragments of two k-blocks stay in registers; the loop only issues HMMAs (32 per k-block).
  Its rate is the instruction's ceiling, its joules per TFLOP the tensor cores' and register file's part.
* ``ldsm``: every k-block's fragments come from shared memory through ``ldmatrix.x4`` (4 for A, 4 for B, the
  GEMM's 4 KB per warp and k-block, conflict-free), those of k-block k+1 loading while k-block k computes,
  over 3 stages of 48 KB (the GEMM's 144 KB). No barrier: the data never changes.
* ``ldsm+bar``: the same with a ``__syncthreads`` per k-tile of 4 k-blocks (the GEMM's barrier).
* ``stream``: the GEMM's operand traffic with the ldsm kernel's work on it. Each CTA walks 4 tiles of 256x128 of
  the n^3 problem (m fastest), their k-tiles one cp.async pipeline of 3 stages (48 KB per k-tile, 16-byte
  ``cp.async.cg``), ``wait_group`` and a barrier per k-tile, ldmatrix and HMMAs on the landed stage: the GEMM's
  main loop without its prologue per tile, its epilogue and its last partial wave. FLOP as the tiles' GEMM.
* ``stream, copies only``: the same copies, waits and barriers without ldmatrix or HMMA (counted with the
  FLOP its copies serve, so that its joules per TFLOP add to the ldsm kernels').
* the GEMM itself (``tc.gemm`` with the config, 4096^3, operands rotated past L2, checked against float64)
  and cuBLAS.

Each is timed in turn over rounds (CUDA events), then run back to back for ``--sustain`` seconds while the SM
clock and board power are sampled (``tilecraft.bench.timing.sustain``): TFLOP/s, clock, watts, joules per
TFLOP and FLOP per SM per clock. At the 700 W limit a kernel's speed is its watts over its joules per
operation: if ``regs`` cannot sustain 500 TFLOP/s, no mma.sync GEMM can.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import tilecraft as tc  # noqa: E402
import tilecraft.runtime as rt  # noqa: E402
from tilecraft.bench.timing import Timer, against, in_turn, sustain  # noqa: E402
from tilecraft.gemm import TensorOpConfig as T  # noqa: E402

WARPS = 8
STAGE_BYTES = 48 * 1024                      # A 256x64 + B 128x64 of 16-bit elements
STAGES = 3
#: FLOP of one m16n8k16
HMMA_FLOP = 2 * 16 * 8 * 16

SOURCE = r"""
typedef unsigned u32;

template <int BF>
__device__ __forceinline__ void mma(float* d, const u32* a, const u32* b) {
  if (BF)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void ldsm4(u32* r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// 4 x 8 m16n8k16 on one k-block, n serpentine (consecutive instructions share A)
template <int BF>
__device__ __forceinline__ void kblock(float (&acc)[4][8][4], const u32 (&a)[4][4], const u32 (&b)[8][2]) {
#pragma unroll
  for (int m = 0; m < 4; ++m)
#pragma unroll
    for (int nn = 0; nn < 8; ++nn) {
      const int n = (m & 1) ? 7 - nn : nn;
      mma<BF>(acc[m][n], a[m], b[n]);
    }
}

__device__ __forceinline__ void keep(float (&acc)[4][8][4], float* out) {
  float s = 0.f;
#pragma unroll
  for (int m = 0; m < 4; ++m)
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int q = 0; q < 4; ++q) s += acc[m][n][q];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// Two k-blocks of fragments in registers, HMMAs only: iters x 2 k-blocks x 32 per warp.
template <int BF>
__device__ void regs(const uint4* __restrict__ src, float* __restrict__ out, int iters) {
  u32 a[2][4][4], b[2][8][2];
  const u32* p = reinterpret_cast<const u32*>(src) + (blockIdx.x * blockDim.x + threadIdx.x) * 64;
#pragma unroll
  for (int i = 0; i < 32; ++i) (&a[0][0][0])[i] = p[i];
#pragma unroll
  for (int i = 0; i < 32; ++i) (&b[0][0][0])[i] = p[32 + i];
  float acc[4][8][4] = {};
  for (int it = 0; it < iters; ++it) {
    kblock<BF>(acc, a[0], b[0]);
    kblock<BF>(acc, a[1], b[1]);
  }
  keep(acc, out);
}

// The GEMM's shared-memory reads without its loads: per k-block and warp 4 + 4 ldmatrix.x4 (4 KB), the next
// k-block's while this one computes; iters k-tiles of 4 k-blocks over 3 stages of 48 KB; BAR: a barrier per
// k-tile. Layout: each x4 fragment is 512 contiguous bytes (lane l reads row l % 8 of matrix l / 8 at l * 16),
// every 8-lane phase 128 contiguous bytes: conflict-free. Stage s: A at [warp_m][kb][m] (32 KB), B at
// [warp_n][kb][n pair] (16 KB).
template <int BF, int BAR>
__device__ void ldsm(const uint4* __restrict__ src, float* __restrict__ out, int iters) {
  extern __shared__ __align__(1024) uint4 smem[];
  const uint4* p = src + (size_t)blockIdx.x * (STAGES * STAGE_BYTES / 16);
  for (int i = threadIdx.x; i < STAGES * STAGE_BYTES / 16; i += blockDim.x) smem[i] = p[i];
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / 2, wn = warp % 2;
  const unsigned base = (unsigned)__cvta_generic_to_shared(smem) + lane * 16;
  auto a_at = [&](int s, int kb, int m) { return base + s * STAGE_BYTES + ((wm * 4 + kb) * 4 + m) * 512; };
  auto b_at = [&](int s, int kb, int n2) {
    return base + s * STAGE_BYTES + 32768 + ((wn * 4 + kb) * 4 + n2) * 512;
  };
  u32 a[2][4][4], b[2][8][2];
  float acc[4][8][4] = {};
#pragma unroll
  for (int m = 0; m < 4; ++m) ldsm4(a[0][m], a_at(0, 0, m));
#pragma unroll
  for (int n2 = 0; n2 < 4; ++n2) ldsm4(&b[0][2 * n2][0], b_at(0, 0, n2));
  int s = 0;
  for (int it = 0; it < iters; ++it) {
    const int s_next = s == STAGES - 1 ? 0 : s + 1;
#pragma unroll
    for (int kb = 0; kb < 4; ++kb) {
      if (BAR && kb == 3) __syncthreads();
      const int nk = (kb + 1) & 3, ns = kb == 3 ? s_next : s;
#pragma unroll
      for (int m = 0; m < 4; ++m) ldsm4(a[nk & 1][m], a_at(ns, nk, m));
#pragma unroll
      for (int n2 = 0; n2 < 4; ++n2) ldsm4(&b[nk & 1][2 * n2][0], b_at(ns, nk, n2));
      kblock<BF>(acc, a[kb & 1], b[kb & 1]);
    }
    s = s_next;
  }
  keep(acc, out);
}

// The GEMM's operand traffic: each CTA walks `tiles` tiles of 256x128 of an n^3 problem (A (n,n) and B (n,n), both
// K-major), tile t = blockIdx.x + gridDim.x * j in m-fastest order, as one cp.async pipeline of NS stages of 48 KB
// across its tiles (no prologue per tile, no epilogue). Per k-tile 48 KB, 12 16-byte cp.async.cg per thread, chunk
// c = thread + 256 j at c * 16 in the stage (A's 256 rows of 128 bytes, then B's 128: 8 threads per row, coalesced
// reads, conflict-free writes); wait_group NS-2 and a barrier per k-tile as the GEMM's main loop. MMA: the ldsm
// kernel's fragment reads and HMMAs on the landed stage (4 k-blocks per k-tile); without it only the copies.
// k_wrap (a power of two) < n / 64 reads only the first k_wrap k-tiles of every tile's rows, over and over (an
// L2-resident stream: the same traffic into shared memory, next to nothing from DRAM). PARTS = 4 spreads each
// k-tile's copies over the 4 k-blocks of the iteration that issues them (3 per thread and k-block).
template <int BF, int MMA, int NS, int PARTS = 1>
__device__ void stream(const uint4* __restrict__ A, const uint4* __restrict__ B, float* __restrict__ out, int tiles,
                       int n, int k_wrap) {
  extern __shared__ __align__(1024) uint4 smem[];
  const int k_tiles = n / 64, m_tiles = n / 256, row16 = n / 8, total = tiles * k_tiles;
  const int all_tiles = m_tiles * (n / 128);
  const unsigned sbase = (unsigned)__cvta_generic_to_shared(smem);
  int next_tile = blockIdx.x % all_tiles, next_kt = 0, write = 0;
  // this thread's chunks j of a k-tile: row threadIdx.x / 8 + 32 j, 16 bytes threadIdx.x % 8 (A: j < 8, B: j >= 8)
  const size_t mine = (size_t)(threadIdx.x / 8) * row16 + threadIdx.x % 8, rows32 = (size_t)32 * row16;
  const uint4 *a_tile = A, *b_tile = B, *a_src = A, *b_src = B;
  auto issue = [&](int part) {                // part of the next k-tile -> stage `write`; after the last, advance
    if (next_kt == 0 && part == 0) {
      a_tile = A + (size_t)(next_tile % m_tiles) * 256 * row16 + mine;
      b_tile = B + (size_t)(next_tile / m_tiles) * 128 * row16 + mine;
    }
    if ((next_kt & (k_wrap - 1)) == 0 && part == 0) {  // k_wrap < n / 64: the first k_wrap k-tiles over and over
      a_src = a_tile;
      b_src = b_tile;
    }
    const unsigned dst = sbase + write * STAGE_BYTES + threadIdx.x * 16;
#pragma unroll
    for (int j = 0; j < 12; ++j) {
      if (j / (12 / PARTS) != part) continue;
      const uint4* src = j < 8 ? a_src + j * rows32 : b_src + (j - 8) * rows32;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst + j * 4096), "l"(src) : "memory");
    }
    if (part != PARTS - 1) return;
    a_src += 8;                               // the next k-tile: 64 elements on
    b_src += 8;
    write = write == NS - 1 ? 0 : write + 1;
    if (++next_kt == k_tiles) {
      next_kt = 0;
      next_tile += gridDim.x;
      if (next_tile >= all_tiles) next_tile -= all_tiles;
    }
  };
  auto commit = []() { asm volatile("cp.async.commit_group;" ::: "memory"); };
  // spread over the k-blocks, k-tile g + NS - 1's group is committed after the wait of iteration g: one less
  auto wait = []() { asm volatile("cp.async.wait_group %0;" :: "n"(PARTS == 1 ? NS - 2 : NS - 3) : "memory"); };
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / 2, wn = warp % 2;
  const unsigned base = sbase + lane * 16;
  auto a_at = [&](int s, int kb, int m) { return base + s * STAGE_BYTES + ((wm * 4 + kb) * 4 + m) * 512; };
  auto b_at = [&](int s, int kb, int n2) {
    return base + s * STAGE_BYTES + 32768 + ((wn * 4 + kb) * 4 + n2) * 512;
  };
  u32 a[2][4][4], b[2][8][2];
  float acc[4][8][4] = {};
  for (int g = 0; g < NS - 1; ++g) {
#pragma unroll
    for (int part = 0; part < PARTS; ++part) issue(part);
    commit();
  }
  wait();
  __syncthreads();
  if (MMA) {
#pragma unroll
    for (int m = 0; m < 4; ++m) ldsm4(a[0][m], a_at(0, 0, m));
#pragma unroll
    for (int n2 = 0; n2 < 4; ++n2) ldsm4(&b[0][2 * n2][0], b_at(0, 0, n2));
  }
  int s = 0;
  for (int g = 0; g < total; ++g) {
    const int s_next = s == NS - 1 ? 0 : s + 1;
#pragma unroll
    for (int kb = 0; kb < 4; ++kb) {
      if (kb == 3) {
        wait();
        __syncthreads();
      }
      const int nk = (kb + 1) & 3, ns = kb == 3 ? s_next : s;
      if (MMA) {
#pragma unroll
        for (int m = 0; m < 4; ++m) ldsm4(a[nk & 1][m], a_at(ns, nk, m));
#pragma unroll
        for (int n2 = 0; n2 < 4; ++n2) ldsm4(&b[nk & 1][2 * n2][0], b_at(ns, nk, n2));
      }
      if (PARTS == 1 && kb == 0) {
        if (g + NS - 1 < total) issue(0);
        commit();
      }
      if (PARTS == 4) {                       // a quarter of the copies per k-block (CUTLASS's multistage order)
        if (g + NS - 1 < total) issue(kb);
        if (kb == 3) commit();
      }
      if (MMA) kblock<BF>(acc, a[kb & 1], b[kb & 1]);
    }
    s = s_next;
  }
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  if (MMA) keep(acc, out);
}

"""

_PROBE_PARAMS = "const uint4* __restrict__ src, float* __restrict__ out, int iters"
_STREAM_PARAMS = ("const uint4* __restrict__ A, const uint4* __restrict__ B, float* __restrict__ out, int tiles, "
                  "int n, int k_wrap")


def _entries() -> str:
    """The probes' kernels (8 warps, one CTA per SM): name, then the template instance it runs."""
    kernels = []
    for bf, t in ((0, "f16"), (1, "bf16")):
        kernels += [(f"regs_{t}", f"regs<{bf}>", _PROBE_PARAMS), (f"ldsm_{t}", f"ldsm<{bf}, 0>", _PROBE_PARAMS),
                    (f"ldsm_bar_{t}", f"ldsm<{bf}, 1>", _PROBE_PARAMS),
                    (f"stream3_{t}", f"stream<{bf}, 1, 3>", _STREAM_PARAMS),
                    (f"stream4_{t}", f"stream<{bf}, 1, 4>", _STREAM_PARAMS),
                    (f"stream4s_{t}", f"stream<{bf}, 1, 4, 4>", _STREAM_PARAMS)]
    kernels += [(f"stream{ns}_copy", f"stream<0, 0, {ns}>", _STREAM_PARAMS) for ns in (3, 4)]
    args = {_PROBE_PARAMS: "src, out, iters", _STREAM_PARAMS: "A, B, out, tiles, n, k_wrap"}
    head = 'extern "C" __global__ void __launch_bounds__(256, 1)'
    return "".join(f"{head}\n{name}({params}) {{ {call}({args[params]}); }}\n" for name, call, params in kernels)


SOURCE += _entries()

#: 256x128 tiles each CTA of the stream probes walks (4096^3 has 512: 132 CTAs x 4 walk 528)
STREAM_TILES = 4
#: name -> (kernel prefix, HMMAs per warp and iteration, dynamic shared memory)
PROBES = {"regs": ("regs", 64, 0), "ldsm": ("ldsm", 128, STAGES * STAGE_BYTES),
          "ldsm+bar": ("ldsm_bar", 128, STAGES * STAGE_BYTES)}


def compile_probes(arch: str = "sm_90a") -> Any:
    """The probe kernels' module (every kernel: 8 warps, no spills)."""
    defines = [("WARPS", str(WARPS)), ("STAGES", str(STAGES)), ("STAGE_BYTES", str(STAGE_BYTES))]
    return rt.compile(SOURCE, arch=arch, options={"define_macro": defines}, name="probe_mma_ceiling.cu")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtypes", default="float16,bfloat16")
    ap.add_argument("--gemm", default="T(256, 128, 64, 4, 2, stages=3, lean_loop=True, smem_epilogue=True)",
                    help="the sm80 GEMM's config (a T(...) expression) timed at --size^3 beside the probes")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--k-wrap", type=int, default=8, help="k-tiles of the L2-resident stream probes (a power of 2)")
    ap.add_argument("--launch-us", type=float, default=300.0, help="about how long one probe launch runs")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sustain", type=float, default=3.0, help="seconds back to back per contender (0: none)")
    args = ap.parse_args()
    n = args.size
    if n % 256 or args.k_wrap & (args.k_wrap - 1) or not 0 < args.k_wrap < n // 64:
        raise SystemExit("--size must be a multiple of 256 (the stream probes' 256x128 tiles) and --k-wrap a "
                         "power of two below its k-tiles")
    cfg = eval(args.gemm, {"T": T})  # noqa: S307
    if not isinstance(cfg, T):
        raise SystemExit(f"--gemm: {args.gemm!r} is not a TensorOpConfig")
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    print(f"# mma.sync's ceiling, {props.name}, {sms} SMs, torch {torch.__version__}\n")
    mod = compile_probes()
    for name in mod.kernel_names:
        r = mod.kernel(name).resources
        print(f"- {name}: {r.registers} registers, {r.spill_store_bytes} spilled bytes")
    timer = Timer(warmup_ms=20.0, rep_ms=60.0)
    out = torch.empty(sms * WARPS * 32, device="cuda")
    rows, sustained = [], []
    for dtype in args.dtypes.split(","):
        dt = getattr(torch, dtype)
        tag = {"float16": "f16", "bfloat16": "bf16"}[dtype]
        # randn bits of the operand type (never zeros), a CTA's 144 KB for ldsm, 64 words per thread for regs
        src = torch.randn(sms * STAGES * STAGE_BYTES // 2, device="cuda").to(dt).view(torch.int32)
        calls: dict[str, tuple[Any, float]] = {}
        for label, (prefix, per_iter, smem) in PROBES.items():
            k = mod.kernel(f"{prefix}_{tag}")

            def launch(iters: int, k: Any = k, smem: int = smem) -> None:
                k(src, out, iters, grid=sms, block=WARPS * 32, smem=smem)
            probe = Timer(warmup_ms=5.0, reps=5)
            us = probe(lambda: launch(256), [()]).median_ms * 1e3
            iters = max(16, int(256 * args.launch_us / us))
            flop = sms * WARPS * iters * per_iter * HMMA_FLOP
            calls[label] = (lambda iters=iters, launch=launch: launch(iters), flop)
        operands = [(torch.randn(n, n, device="cuda", dtype=dt), torch.randn(n, n, device="cuda", dtype=dt))
                    for _ in range(2)]
        ref = operands[0][0].double() @ operands[0][1].double()
        err = float((tc.gemm(*operands[0], config=cfg).double() - ref).norm() / ref.norm())
        if err > 1e-2:
            raise SystemExit(f"{cfg.name}: relative error {err:.1e} against float64")
        gemm_flop = 2.0 * n ** 3
        walks = STREAM_TILES * sms                                        # tiles the stream probes walk
        stream_flop = walks * 256 * 128 * 2.0 * n

        def streamer(name: str, k_wrap: int, stages: int) -> Any:
            k = mod.kernel(name)
            return lambda x, w: k(x, w, out, STREAM_TILES, n, k_wrap, grid=sms, block=WARPS * 32,
                                  smem=stages * STAGE_BYTES)
        on_operands: dict[str, tuple[Any, float]] = {}  # contenders that take (A, B)
        for stages, wrap, kind in ((3, n // 64, tag), (4, n // 64, tag), (4, n // 64, "s"), (3, args.k_wrap, tag),
                                   (4, args.k_wrap, tag), (4, args.k_wrap, "s"), (3, n // 64, "copy"),
                                   (3, args.k_wrap, "copy")):
            label = (f"stream{', copies only' if kind == 'copy' else ''}, {stages} stages"
                     f"{', copies spread over the k-blocks' if kind == 's' else ''}"
                     f"{f', L2-resident ({wrap} k-tiles)' if wrap < n // 64 else ''}")
            name = f"stream{stages}s_{tag}" if kind == "s" else f"stream{stages}_{kind}"
            on_operands[label] = (streamer(name, wrap, stages), stream_flop)
        on_operands[f"sm80 {cfg.name} ({n}³, err {err:.1e})"] = (lambda x, w: tc.gemm(x, w, config=cfg), gemm_flop)
        on_operands[f"cuBLAS ({n}³)"] = (lambda x, w: x @ w, gemm_flop)
        timers = {nm: (lambda c=c: timer(c, [()]).median_ms) for nm, (c, _) in calls.items()}
        timers.update({nm: (lambda c=c: timer(c, operands).median_ms) for nm, (c, _) in on_operands.items()})
        times = against(in_turn(timers, args.rounds), next(iter(timers)))
        flops = {**{nm: f for nm, (_, f) in calls.items()}, **{nm: f for nm, (_, f) in on_operands.items()}}
        for nm, (ms, _, spread) in times.items():
            rows.append(f"| {dtype} | {nm} | {ms * 1e3:.1f} | {flops[nm] / ms / 1e9:.1f} | {spread:.1%} |")
        if args.sustain > 0:
            for nm, (c, f) in [*calls.items(), *on_operands.items()]:
                r = sustain(c, [()] if nm in calls else operands, args.sustain)
                tf = f / r.ms / 1e9
                per_clk = tf * 1e12 / (sms * r.clock_mhz * 1e6)
                sustained.append(f"| {dtype} | {nm} | {tf:.1f} | {r.clock_mhz:.0f} / {r.min_clock_mhz:.0f} MHz | "
                                 f"{r.watts:.0f} W | {r.watts / tf:.3f} | {per_clk:.0f} |")
    print("\nIn turn (CUDA events; medians over rounds):\n")
    print("| dtype | contender | µs per launch | TFLOP/s | spread |\n|---|---|---:|---:|---:|")
    print("\n".join(rows))
    if sustained:
        print(f"\n{args.sustain:g} s back to back each, clock and power over the last two thirds:\n")
        print("| dtype | contender | TFLOP/s | SM clock (median / min) | power | J per TFLOP "
              "| FLOP per SM and clock |\n|---|---|---:|---:|---:|---:|---:|")
        print("\n".join(sustained))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
