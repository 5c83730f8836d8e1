#!/usr/bin/env python
"""Issue 9: what does *reading* a weight cost? The floor under the small-M mixed-input GEMM.

    PYTHONPATH=$PWD python3 benchmarks/bench_stream.py [--mb 34.6,67.1,242.2] [--json out.json]

The decoding GEMM's time is the time to stream W from HBM, and its target is stated as a bandwidth. This
script times, in the same harness as bench_mixed.py (CUDA-event medians, >= 4 rotated copies past L2):

* ``empty``: a kernel that does nothing (the event pair's and launch's own cost);
* ``read gs U=u b=k``: a read-only kernel, each thread keeping ``u`` 16-byte loads in flight, grid-stride
  over the buffer with k CTAs of 256 threads per SM (the result is folded so it cannot be dropped);
* ``read cta ...``: the same, but each CTA reads one contiguous slice (the split-K kernels' pattern);
* ``torch copy``: ``dst.copy_(src)``, reported as (read + write) bytes / time and as read bytes / time;
* ``W4 g128 M=1``: tilecraft's mixed GEMM on a weight of the same bytes, when the size is a W4 8192^2 one.

The point is the fixed cost: for each pattern the time is fitted as t = t0 + bytes / BW over the sizes, so
a short stream's shortfall against the 1 GB copy shows up as t0, not as a lower bandwidth.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import tilecraft.runtime as rt  # noqa: E402
from tilecraft.bench.rotation import copies_for_rotation, l2_cache_bytes  # noqa: E402
from tilecraft.bench.timing import Timer  # noqa: E402

#: a CTA's contiguous slice of a buffer, and its read with U 16-byte loads in flight per thread (also the read
#: floor probe's ``ldg``, benchmarks/probe_read_floor.py)
READ_SLICE = r"""
// This CTA's contiguous slice [lo, hi) of the buffer's n16 16-byte vectors.
__device__ __forceinline__ void slice(unsigned long long n16, unsigned long long& lo, unsigned long long& hi) {
  unsigned long long per = (n16 + gridDim.x - 1) / gridDim.x;
  lo = blockIdx.x * per;
  hi = lo + per < n16 ? lo + per : n16;
}

// Read vectors [lo, hi), U loads in flight per thread.
template <int U>
__device__ __forceinline__ void read_slice(const uint4* __restrict__ p, unsigned long long lo, unsigned long long hi,
                                           unsigned* out) {
  unsigned acc = 0;
  unsigned long long i = lo + threadIdx.x;
  for (; i + (U - 1) * blockDim.x < hi; i += U * blockDim.x) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = __ldcs(p + i + u * blockDim.x);
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < hi; i += blockDim.x) { uint4 v = __ldcs(p + i); acc ^= v.x ^ v.y ^ v.z ^ v.w; }
  if (acc == 0x9e3779b9u) out[0] = acc;                     // never in practice; keeps the loads
}
"""

SOURCE = READ_SLICE + r"""

extern "C" __global__ void empty_kernel(unsigned* out) {}

// Every thread keeps U 16-byte loads in flight: grid-stride over n16 vectors.
template <int U>
__device__ void read_gs(const uint4* __restrict__ p, unsigned long long n16, unsigned* out) {
  unsigned acc = 0;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n16; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = __ldcs(p + i + u * stride);
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n16; i += stride) { uint4 v = __ldcs(p + i); acc ^= v.x ^ v.y ^ v.z ^ v.w; }
  if (acc == 0x9e3779b9u) out[0] = acc;                    // never in practice; keeps the loads
}

// Each CTA reads one contiguous slice of n16 / gridDim.x vectors, U loads in flight per thread.
template <int U>
__device__ void read_cta(const uint4* __restrict__ p, unsigned long long n16, unsigned* out) {
  unsigned long long lo, hi;
  slice(n16, lo, hi);
  read_slice<U>(p, lo, hi, out);
}

"""
UNROLLS = (1, 2, 4, 8)
SOURCE += "".join(
    f'extern "C" __global__ void read_{kind}_{u}(const uint4* p, unsigned long long n, unsigned* o) '
    f'{{ read_{kind}<{u}>(p, n, o); }}\n' for kind in ("gs", "cta") for u in UNROLLS)
TIMER = Timer(warmup_ms=20, rep_ms=60, min_reps=20)


def _sets(nbytes: int) -> list[Any]:
    n = max(4, copies_for_rotation(nbytes, l2_cache_bytes(), factor=3.0, max_bytes=24 << 30))
    bufs = []
    for _ in range(n):
        b = torch.empty(nbytes // 16 * 16, dtype=torch.uint8, device="cuda")
        b.view(torch.int32).random_()                                    # never time on zeros
        bufs.append(b)
    return bufs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", default="34.6,67.1,121.1,242.2", help="buffer sizes, MB (1e6 bytes)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    mod = rt.compile(SOURCE)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = torch.zeros(4, dtype=torch.int32, device="cuda")
    rows: list[dict] = []

    def us(fn: Any, sets: list[tuple]) -> float:
        return TIMER(fn, sets).median_ms * 1e3

    empty = mod.kernel("empty_kernel")
    rows.append({"what": "empty", "MB": 0.0, "us": us(lambda: empty(out, grid=sms, block=256), [()])})
    for mb in (float(s) for s in args.mb.split(",")):
        nbytes = int(mb * 1e6)
        bufs = _sets(nbytes)
        n16 = bufs[0].numel() // 16
        for kind in ("gs", "cta"):
            for u in UNROLLS:
                k = mod.kernel(f"read_{kind}_{u}")
                for per_sm in (2, 4, 8):
                    grid = sms * per_sm
                    t = us(lambda b: k(b, n16, out, grid=grid, block=256), [(b,) for b in bufs])
                    rows.append({"what": f"read {kind} U={u} b={per_sm}", "MB": mb, "us": t,
                                 "GBps": nbytes / t / 1e3})
        dst = [torch.empty_like(b) for b in bufs]
        t = us(lambda a, b: b.copy_(a), list(zip(bufs, dst)))
        rows.append({"what": "torch copy (read+write)", "MB": mb, "us": t, "GBps": 2 * nbytes / t / 1e3})
        del dst, bufs
        torch.cuda.empty_cache()
        print(f"{mb} MB done", flush=True)

    # fixed cost + bandwidth per pattern, least squares over the sizes
    by: dict[str, list[dict]] = {}
    for r in rows:
        if r["MB"]:
            by.setdefault(r["what"], []).append(r)
    fits = []
    for what, rs in by.items():
        xs, ys = [r["MB"] for r in rs], [r["us"] for r in rs]
        n = len(xs)
        mx, my = sum(xs) / n, sum(ys) / n
        sxx = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else float("nan")
        fits.append({"what": what, "t0_us": my - slope * mx, "GBps_fit": 1e3 / slope if slope else float("nan"),
                     **{f"us@{r['MB']}": r["us"] for r in rs}})
    fits.sort(key=lambda f: min(v for k, v in f.items() if k.startswith("us@")))
    print(f"empty kernel: {rows[0]['us']:.2f} us")
    sizes = sorted({r["MB"] for r in rows if r["MB"]})
    print("| pattern | " + " | ".join(f"{s} MB µs (GB/s)" for s in sizes) + " | t0 µs | fitted GB/s |")
    print("|---|" + "---:|" * (len(sizes) + 2))
    for f in fits:
        cells = []
        for s in sizes:
            t = f.get(f"us@{s}")
            cells.append(f"{t:.2f} ({s * 1e3 / t:.0f})" if t else "")
        print(f"| {f['what']} | " + " | ".join(cells) + f" | {f['t0_us']:.2f} | {f['GBps_fit']:.0f} |")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "fits": fits}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
