#!/usr/bin/env python
"""Issue 9: the floor under a decoding stream. How fast can a kernel that only *reads* a W4A16 g128
8192 x 8192 weight's bytes (34.6 MB) go, launched the way tc.gemm launches the small-M kernel: back to back,
as programmatic dependent launches, each asking L2 for the start of its slice before it waits?

    PYTHONPATH=$PWD python3 benchmarks/probe_read_floor.py [--rounds 3] [--calls 32] [--mb 34.6]

bench_stream.py's read floor (fifth session) timed each launch between its own events, so it carries the
launch and the ramp (t0 ~ 4 us); the small-M kernel is timed as a stream (bench_decode.py, "stream+pdl").
Here the read-only kernels run as the same stream, in the same process and rounds as tilecraft's W4 kernel
(``MixedGemm(pdl=True)`` at M = 1 and 8), so the two compare directly:

* ``ldg g=G b=B U=u``: G CTAs of B threads (at most ceil(G / SMs) per SM, as MixedGemm caps a PDL launch),
  each reading one contiguous slice with u 16-byte ``ld.global.cs`` in flight per thread;
* ``bulk g=G S=s x KB``: one thread per CTA streams its slice through s shared-memory stages of KB kilobytes
  with ``cp.async.bulk`` (TMA's 1-D copy) completing on mbarriers; the data is not looked at;
* ``ring cp|bulk g=G b=B P=p x KB``: the small-M kernel's own structure without its arithmetic. Each warp takes
  the CTA's KB-kilobyte chunks round-robin through p shared-memory stages of its own, filled by every lane's
  16-byte ``cp.async`` (cp) or by one ``cp.async.bulk`` on an mbarrier (bulk);
* ``ring cta g=G b=B P=p x KB``: a producer warp (the last) fills p CTA-wide stages of KB kilobytes with one
  ``cp.async.bulk`` each; the other warps wait on the stage's mbarrier, read it and release it (one arrival
  per warp on an ``empty`` mbarrier the producer waits on).

Every kernel first asks L2 (``cp.async.bulk.prefetch.L2``) for the first 2/16 of its slice, then
``griddepcontrol.wait`` and ``launch_dependents``, as the small-M kernel does. Buffers rotate over copies
> 3x L2, filled with random bits.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import bench_mixed as BM  # noqa: E402
from bench_stream import READ_SLICE  # noqa: E402
import tilecraft.runtime as rt  # noqa: E402
from tilecraft.bench.rotation import copies_for_rotation, l2_cache_bytes  # noqa: E402
from tilecraft.bench.timing import Timer, against, in_turn  # noqa: E402
from tilecraft.gemm.mixed import MixedGemm  # noqa: E402

SOURCE = READ_SLICE + r"""
__device__ __forceinline__ unsigned su32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// Ask L2 for the first pf16 / 16 of the slice, wait for the previous kernel, let the next one launch.
__device__ __forceinline__ void pdl_start(const char* slice, unsigned long long bytes, int pf16) {
  unsigned pf = (unsigned)(bytes * pf16 / 16) & ~15u;
  if (threadIdx.x == 0 && pf > 0)
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(slice), "r"(pf) : "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

__device__ __forceinline__ void bar_init(unsigned long long* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(su32(b)), "r"(count));
}
__device__ __forceinline__ void bar_wait(unsigned long long* b, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred q; mbarrier.try_wait.parity.shared::cta.b64 q, [%1], %2; selp.u32 %0, 1, 0, q; }"
                 : "=r"(done) : "r"(su32(b)), "r"(parity) : "memory");
}
__device__ __forceinline__ void bar_arrive(unsigned long long* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(su32(b)) : "memory");
}
// One thread: `bytes` from global `src` to shared `dst` (cp.async.bulk), announced on and completing on `b`.
__device__ __forceinline__ void bulk_copy(void* dst, const char* src, unsigned bytes, unsigned long long* b) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(su32(b)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(su32(dst)), "l"(src), "r"(bytes), "r"(su32(b)) : "memory");
}

// One contiguous slice per CTA, U 16-byte loads in flight per thread (bench_stream.py's read, after pdl_start).
template <int U>
__device__ void ldg(const uint4* __restrict__ p, unsigned long long n16, unsigned* out, int pf16) {
  unsigned long long lo, hi;
  slice(n16, lo, hi);
  pdl_start((const char*)(p + lo), (hi - lo) * 16, pf16);
  read_slice<U>(p, lo, hi, out);
}

// Thread 0 streams the CTA's slice through S stages of `chunk` bytes (cp.async.bulk, mbarrier complete_tx).
template <int S>
__device__ void bulk(const uint4* __restrict__ p, unsigned long long n16, unsigned* out, int pf16, unsigned chunk) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) unsigned long long bar[S];
  unsigned long long lo, hi;
  slice(n16, lo, hi);
  const char* src = (const char*)(p + lo);
  unsigned long long bytes = (hi - lo) * 16;
  pdl_start(src, bytes, pf16);
  if (threadIdx.x != 0) return;
  for (int s = 0; s < S; ++s) bar_init(&bar[s], 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  unsigned long long n = (bytes + chunk - 1) / chunk;            // pieces of the slice
  auto issue = [&](unsigned long long j) {
    unsigned long long off = j * chunk;
    bulk_copy(smem + (j % S) * chunk, src + off, (unsigned)(bytes - off < chunk ? bytes - off : chunk), &bar[j % S]);
  };
  for (unsigned long long j = 0; j < n && j < S; ++j) issue(j);
  for (unsigned long long j = 0; j < n; ++j) {
    bar_wait(&bar[j % S], (unsigned)((j / S) & 1));
    if (j + S < n) issue(j + S);
  }
  if (bytes == 1) out[0] = smem[0];
}

// The small-M kernel's structure without its arithmetic: each CTA one contiguous slice, its warps taking the
// slice's `chunk`-byte chunks round-robin through P stages of their own in shared memory. BULK false (ring_cp):
// every lane cp.async's 16-byte pieces (cp.async.wait_group, __syncwarp); BULK true (ring_bulk): lane 0 issues
// one cp.async.bulk per chunk on the stage's mbarrier and every lane waits on it.
template <int P, bool BULK>
__device__ void ring(const uint4* __restrict__ p, unsigned long long n16, unsigned* out, int pf16, unsigned chunk) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) unsigned long long bars[BULK ? 16 * P : 1];
  unsigned long long lo, hi;
  slice(n16, lo, hi);
  const char* src = (const char*)(p + lo);
  unsigned long long bytes = (hi - lo) * 16;
  pdl_start(src, bytes, pf16);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, W = blockDim.x / 32;
  unsigned char* ring = smem + (size_t)warp * P * chunk;
  unsigned long long* bar = bars + (BULK ? warp * P : 0);
  long long n = (long long)(bytes / chunk), nw = (n - warp + W - 1) / W;
  if (BULK) {
    if (lane == 0)
      for (int s = 0; s < P; ++s) bar_init(&bar[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    __syncwarp();
  }
  auto issue = [&](long long j) {
    const char* g = src + (warp + W * j) * chunk;
    if (BULK) {
      if (lane == 0 && j < nw) bulk_copy(ring + (j % P) * chunk, g, chunk, &bar[j % P]);
      return;
    }
    if (j < nw) {
      unsigned d = su32(ring + (j % P) * chunk);
      for (unsigned o = lane * 16; o < chunk; o += 512)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d + o), "l"(g + o) : "memory");
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  };
  for (int j = 0; j < P - 1; ++j) issue(j);
  unsigned acc = 0;
  for (long long j = 0; j < nw; ++j) {
    if (BULK) bar_wait(&bar[j % P], (unsigned)((j / P) & 1));
    else asm volatile("cp.async.wait_group %0;" :: "n"(P - 2) : "memory");
    __syncwarp();
    issue(j + P - 1);
    acc ^= *(const unsigned*)(ring + (j % P) * chunk + lane * 16);
  }
  if (acc == 0x9e3779b9u) out[0] = acc;
}

// A producer warp and consumer warps: thread 0 of the last warp streams the CTA's slice through P CTA-wide
// stages of `chunk` bytes (one cp.async.bulk each, on the stage's `full` mbarrier); the other warps wait on
// `full`, read their part and arrive on `empty` (one arrival per warp), which the producer waits on
// before it refills the stage.
template <int P>
__device__ void cta_bulk(const uint4* __restrict__ p, unsigned long long n16, unsigned* out, int pf16, unsigned chunk) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) unsigned long long full[P], empty[P];
  unsigned long long lo, hi;
  slice(n16, lo, hi);
  const char* src = (const char*)(p + lo);
  unsigned long long bytes = (hi - lo) * 16;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, C = blockDim.x / 32 - 1;   // consumer warps
  if (threadIdx.x == 0)
    for (int s = 0; s < P; ++s) {
      bar_init(&full[s], 1);
      bar_init(&empty[s], C);
    }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  pdl_start(src, bytes, pf16);
  long long n = (long long)((bytes + chunk - 1) / chunk);
  if (warp == C) {
    if (lane == 0)
      for (long long j = 0; j < n; ++j) {
        int s = (int)(j % P);
        if (j >= P) bar_wait(&empty[s], (unsigned)(((j / P) - 1) & 1));
        unsigned long long off = j * chunk;
        bulk_copy(smem + (size_t)s * chunk, src + off, (unsigned)(bytes - off < chunk ? bytes - off : chunk), &full[s]);
      }
    return;
  }
  unsigned acc = 0;
  for (long long j = 0; j < n; ++j) {
    int s = (int)(j % P);
    bar_wait(&full[s], (unsigned)((j / P) & 1));
    acc ^= *(const unsigned*)(smem + (size_t)s * chunk + (warp * 32 + lane) * 16 % chunk);
    __syncwarp();
    if (lane == 0) bar_arrive(&empty[s]);
  }
  if (acc == 0x9e3779b9u) out[0] = acc;
}
"""
UNROLLS = (2, 4, 8)
RINGS = (4, 6, 8)
SOURCE += "".join(f'extern "C" __global__ void {k}_{r}(const uint4* p, unsigned long long n, unsigned* o, int pf, '
                  f'unsigned c) {{ {t}<{r}{b}>(p, n, o, pf, c); }}\n'
                  for k, t, b in (("ring_cp", "ring", ", false"), ("ring_bulk", "ring", ", true"),
                                  ("cta_bulk", "cta_bulk", "")) for r in RINGS)
STAGES = (4, 8)
SOURCE += "".join(f'extern "C" __global__ void ldg_{u}(const uint4* p, unsigned long long n, unsigned* o, int pf) '
                  f'{{ ldg<{u}>(p, n, o, pf); }}\n' for u in UNROLLS)
SOURCE += "".join(f'extern "C" __global__ void bulk_{s}(const uint4* p, unsigned long long n, unsigned* o, int pf, '
                  f'unsigned c) {{ bulk<{s}>(p, n, o, pf, c); }}\n' for s in STAGES)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=34.6, help="bytes read per call, MB (1e6)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=32, help="back-to-back calls per timed sample")
    ap.add_argument("--pf", type=int, default=2, help="sixteenths of each slice prefetched before the wait")
    ap.add_argument("--ldg", default="528,256,4;512,256,4;528,128,4;512,128,4",
                    help="';'-separated G,B,U of the ldg kernels")
    ap.add_argument("--bulk", default="264,4,16;528,4,8",
                    help="';'-separated G,S,KB of the bulk kernels")
    ap.add_argument("--ring", default="cp,512,128,4,1;cp,512,128,6,1;bulk,512,128,4,1;cta,512,160,4,4;"
                    "cta,528,160,4,4;cta,264,160,4,16",
                    help="';'-separated kind (cp, bulk or cta),G,B,P,KB of the ring kernels")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    print(f"# the read floor as a PDL stream, {props.name}, {sms} SMs, torch {torch.__version__}\n")
    mod = rt.compile(SOURCE, arch="sm_90a")
    nbytes = int(args.mb * 1e6) // 16 * 16
    n = max(4, copies_for_rotation(nbytes, l2_cache_bytes(), factor=3.0, max_bytes=24 << 30))
    bufs = []
    for _ in range(n):
        b = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        b.view(torch.int32).random_()                                    # never time on zeros
        bufs.append((b,))
    n16 = nbytes // 16
    out = torch.zeros(4, dtype=torch.int32, device="cuda")
    timer = Timer(warmup_ms=20, rep_ms=60, min_reps=20 * args.calls, calls_per_sample=args.calls)
    timers: dict[str, Any] = {}

    def add(name: str, k: Any, grid: int, block: int, smem: int, *extra: int) -> None:
        """Time kernel k on every buffer as a PDL stream, at most ceil(grid / SMs) CTAs per SM (as MixedGemm
        caps its launches: the launch asks for more shared memory than smem where needed)."""
        sm = k.smem_for_occupancy(block, smem, -(-grid // sms))

        def call(buf: Any) -> None:
            k(buf, n16, out, args.pf, *extra, grid=grid, block=block, smem=sm, pdl=True)
        timers[name] = lambda: timer(call, bufs).median_ms * 1e3

    for spec in filter(None, args.ldg.split(";")):
        g, b, u = (int(v) for v in spec.split(","))
        add(f"ldg g={g} b={b} U={u}", mod.kernel(f"ldg_{u}"), g, b, 0)
    for spec in filter(None, args.bulk.split(";")):
        g, st, kb = (int(v) for v in spec.split(","))
        add(f"bulk g={g} S={st} x {kb} KB", mod.kernel(f"bulk_{st}"), g, 32, st * kb * 1024, kb * 1024)
    for spec in filter(None, args.ring.split(";")):
        kind, g, b, r, kb = spec.split(",")
        g, b, r, c = int(g), int(b), int(r), int(float(kb) * 1024)
        k = mod.kernel({"cp": "ring_cp", "bulk": "ring_bulk", "cta": "cta_bulk"}[kind] + f"_{r}")
        add(f"ring {kind} g={g} b={b} P={r} x {kb} KB", k, g, b, (b // 32 if kind != "cta" else 1) * r * c, c)

    # tilecraft's W4A16 g128 kernel on an 8192^2 weight (34.6 MB with its scales), as bench_decode's stream+pdl
    pws = BM._packed(8192, 8192, 4, 128, torch.bfloat16)
    errs = []
    for M in (1, 8):
        x = torch.randn(M, 8192, device="cuda").to(torch.bfloat16)
        run = MixedGemm(pws[0].format, pdl=True)
        y = run(x, pws[0])
        ref = x.double() @ pws[0].dequantize(torch.float64)
        errs.append(float((y.double() - ref).norm() / ref.norm()))
        sets = [(x, p) for p in pws]
        timers[f"W4A16 g128 M={M} ({pws[0].nbytes / 1e6:.1f} MB)"] = \
            lambda run=run, sets=sets: timer(run, sets).median_ms * 1e3
    print(f"W4 relative errors against float64: {', '.join(f'{e:.2e}' for e in errs)}")
    if max(errs) > 1.2e-2:
        print("W4 kernel wrong")
        return 1
    for f in timers.values():                                            # compile and warm every contender
        f()
    times = in_turn(timers, args.rounds)
    base = next(k for k in timers if k.startswith("W4A16") and "M=1 " in k)
    cmp = against(times, base)
    print(f"\n{nbytes / 1e6:.1f} MB per call; period = time per call of a {args.calls}-call PDL stream, median of "
          f"{args.rounds} rounds in turn\n")
    print("| kernel | period µs | GB/s | W4 M=1 / it | spread |")
    print("|---|---:|---:|---:|---:|")
    for name, (med, ratio, spread) in sorted(cmp.items(), key=lambda kv: kv[1][0]):
        print(f"| {name} | {med:.2f} | {nbytes / med / 1e3:.0f} | {ratio:.3f} | {spread:.1%} |")
    if args.json:
        args.json.write_text(json.dumps({"device": props.name, "mb": args.mb, "times": times}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
