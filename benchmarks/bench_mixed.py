#!/usr/bin/env python
"""Issue 9: the small-M mixed-input GEMM (tilecraft/gemm/mixed.py) against the memory-bandwidth limit.

    PYTHONPATH=$PWD python3 benchmarks/bench_mixed.py [--quick] [--sweep] [--json out.json]

For each shape (N = K = 8192 and Llama-3-8B / 70B layers, W as (K, N)) and M in {1, 2, 4, 8, 16, 128}:

* ours: W4A16 g128 and W8A16 per-channel (fp16 activations; bf16 for W4 g128 too);
* cuBLAS dense fp16 and bf16 (torch.matmul with the (K, N) weight);
* torch's int4 kernel (torch._weight_int4pack_mm) where this torch has it;
* the measured copy bandwidth: a device-to-device copy of the W4 weight's byte count, as (read + write)
  bytes / time, and of 1 GB (the asymptote).

Every timing rotates among >= 4 copies of the weights (and enough copies that one rotation is > 3x L2), so
the GB/s are HBM figures; CUDA-event medians from tilecraft.bench.timing. GB/s counts the bytes one call
must move (packed weights, scales, zeros, x, y). "% copy" is that GB/s over the GB/s of a device-to-device
copy moving the same number of bytes (read + write, so a copy of half of them), measured the same way.
Each of our configurations is checked against float64 x @ dequantize(W) first. ``--sweep`` also times the
candidate configurations of ``sweep_configs`` (register buffers, L2 prefetch, tiles, chunk, warps,
occupancy, split-K) at N = K = 8192, W4A16 g128 and W8A16 per-channel, fastest first per M, with the
grid each ran on; ``--quick --sweep`` is the tuning run (about 2-3 minutes on an H100).
Prints Markdown tables; ``--json`` writes every row.
"""
from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import tilecraft.quant as Q  # noqa: E402
from tilecraft.bench.report import markdown_table  # noqa: E402
from tilecraft.bench.rotation import copies_for_rotation, l2_cache_bytes  # noqa: E402
from tilecraft.bench.timing import Timer  # noqa: E402
from tilecraft.gemm.mixed import (SMEM_MAX, MixedConfig, launch_grid, mixed_gemm, pick_mixed_config,  # noqa: E402
                                  stage_smem_bytes)

#: (name, K, N): the weight of y = x @ W
SHAPES = [
    ("square 8192", 8192, 8192),
    ("llama3-8b qkv", 4096, 6144), ("llama3-8b o", 4096, 4096), ("llama3-8b gate_up", 4096, 28672),
    ("llama3-8b down", 14336, 4096),
    ("llama3-70b qkv", 8192, 10240), ("llama3-70b o", 8192, 8192), ("llama3-70b gate_up", 8192, 57344),
    ("llama3-70b down", 28672, 8192),
]
MS = [1, 2, 4, 8, 16, 128]
OURS = [("W4A16 g128 fp16", 4, 128, torch.float16), ("W4A16 g128 bf16", 4, 128, torch.bfloat16),
        ("W8A16 pc fp16", 8, None, torch.float16)]
TIMER = Timer(warmup_ms=20, rep_ms=60, min_reps=20)


def _copies(nbytes: int) -> int:
    return max(4, copies_for_rotation(nbytes, l2_cache_bytes(), factor=3.0, max_bytes=24 << 30))


def _time(fn: Callable[..., Any], sets: list[tuple]) -> float:
    """Median microseconds of fn over the rotation sets."""
    return TIMER(fn, sets).median_ms * 1e3


_COPY_GBPS: dict[int, float] = {}


def copy_bandwidth(nbytes: int) -> float:
    """GB/s of a device-to-device copy of nbytes ((read + write) / time), rotating buffers past L2."""
    if nbytes not in _COPY_GBPS:
        n = _copies(nbytes)
        src = [torch.empty(nbytes, dtype=torch.uint8, device="cuda") for _ in range(n)]
        dst = [torch.empty(nbytes, dtype=torch.uint8, device="cuda") for _ in range(n)]
        us = _time(lambda a, b: b.copy_(a), list(zip(src, dst)))
        _COPY_GBPS[nbytes] = 2 * nbytes / us / 1e3
    return _COPY_GBPS[nbytes]


def rates(r: dict) -> dict:
    """A timed row's GB/s, the GB/s of a copy moving the same bytes (r["bytes"] read + written in all),
    and the first over the second."""
    gbps = r["bytes"] / r["us"] / 1e3
    copy = copy_bandwidth(r["bytes"] // 2)
    return {"GBps": gbps, "copy_GBps": copy, "pct_copy": 100 * gbps / copy}


def _check(y: Any, x: Any, pw: Any) -> float:
    ref = x.double() @ pw.dequantize(torch.float64)
    return float((y.double() - ref).norm() / ref.norm())


_PACKED: dict[tuple, list] = {}


def _packed(K: int, N: int, bits: int, group: int | None, dtype: Any, zero_point: bool = False) -> list:
    """The rotation's copies of one random packed weight (made once per format and shape)."""
    key = (K, N, bits, group, dtype, zero_point)
    if key not in _PACKED:
        _PACKED.clear()                                                    # one shape's copies at a time
        w = torch.randn(K, N, device="cuda") * 0.02
        pw0 = Q.pack(Q.quantize(w, bits, group, zero_point), dtype)
        _PACKED[key] = [pw0] + [Q.PackedWeight(pw0.qweight.clone(), pw0.scales.clone(),
                                               None if pw0.zeros is None else pw0.zeros.clone(), pw0.shape, pw0.format)
                                for _ in range(_copies(pw0.nbytes) - 1)]
    return _PACKED[key]


def ours(K: int, N: int, M: int, bits: int, group: int | None, dtype: Any, config: MixedConfig | None = None) -> dict:
    """Time our GEMM; also its relative error against float64 (first copy) and the grid it ran on."""
    pws = _packed(K, N, bits, group, dtype)
    pw0 = pws[0]
    x = torch.randn(M, K, device="cuda").to(dtype)
    y = mixed_gemm(x, pw0, config=config)
    torch.cuda.synchronize()
    err = _check(y, x, pw0)
    us = _time(lambda xx, p: mixed_gemm(xx, p, config=config), [(x, p) for p in pws])
    nbytes = pw0.nbytes + x.numel() * 2 + M * N * 2
    cfg = config or pick_mixed_config(pw0.format, M, K, N)
    blocks, splits = launch_grid(x[:32], pw0, cfg)
    return {"us": us, "bytes": nbytes, "err": err, "config": cfg.name, "grid": f"{blocks}x{splits}", "copies": len(pws)}


def sweep_configs(bits: int, M: int) -> list[MixedConfig | None]:
    """The candidates --sweep times for W (8192, 8192) at M rows (None: pick_mixed_config's choice):
    around the default tiling (4 warps, 4 int4 / 2 int8 tiles at M <= 8, 2 / 1 at M = 16, 128-value
    chunks), one knob at a time and a few combinations: L2 prefetch distance, 3 register buffers, tiles
    (1: 512 row blocks, no split-K), 256-value chunks, 8 warps, a register cap for 4 CTAs per SM, and
    fixed split-K counts."""
    t = (4 if bits == 4 else 2) if M <= 8 else (2 if bits == 4 else 1)
    C = MixedConfig
    out: list[MixedConfig | None] = [None, C(4, t, 128)]
    out += [C(4, t, 128, prefetch=f) for f in (1, 2, 4)]
    out += [C(4, t, 128, stages=3), C(4, t, 128, stages=3, prefetch=2)]
    out += [C(4, t // 2, 128, stages=3, prefetch=2), C(4, t // 2, 256, prefetch=2)]
    out += [C(4, 1, 128, prefetch=2), C(4, 1, 256, prefetch=2), C(8, 1, 128, splits=1, prefetch=2),
            C(8, 1, 256, splits=1, prefetch=2)]
    out += [C(4, 1, 512, splits=1, prefetch=1)] if bits == 4 and M <= 8 else []  # spills at int8 or M = 16
    out += [C(8, t, 128, prefetch=2), C(4, t, 128, min_ctas=4, prefetch=2)]
    out += [C(4, t, 128, splits=s, prefetch=2) for s in (2, 4, 6)]
    # shared-memory stages (cp.async): the bytes in flight no longer cost registers
    out += [C(4, tt, 128, stages=p, async_copy=True) for tt in (1, 2) for p in (4, 6, 8, 12)]
    out += [C(8, 2, 128, stages=8, async_copy=True), C(4, 2, 256, stages=4, async_copy=True),
            C(4, 4, 128, stages=6, async_copy=True)]
    seen, uniq = set(), []
    fmt = Q.PackedFormat(bits, 128 if bits == 4 else None, False, "float16")
    for c in out:
        if c is not None and c.async_copy and stage_smem_bytes(c, fmt, M) > SMEM_MAX:
            continue                                                      # int8's 4-tile stages do not fit
        if c not in seen and (c is None or c.tiles >= 1):
            seen.add(c)
            uniq.append(c)
    return uniq


def dense(K: int, N: int, M: int, dtype: Any) -> dict:
    """cuBLAS: torch.matmul of x (M, K) and a dense (K, N) weight."""
    nbytes = K * N * 2
    n = _copies(nbytes)
    ws = [torch.randn(K, N, device="cuda").to(dtype) for _ in range(n)]
    x = torch.randn(M, K, device="cuda").to(dtype)
    us = _time(torch.matmul, [(x, w) for w in ws])
    return {"us": us, "bytes": nbytes + x.numel() * 2 + M * N * 2}


def torch_int4(K: int, N: int, M: int) -> dict:
    """torch._weight_int4pack_mm (bf16 activations, g128), when this torch has it for CUDA."""
    if not hasattr(torch.ops.aten, "_weight_int4pack_mm") or not hasattr(torch.ops.aten, "_convert_weight_to_int4pack"):
        return {"missing": "no torch._weight_int4pack_mm"}
    try:
        q = torch.randint(0, 16, (N, K), dtype=torch.int32, device="cuda")
        packed_in = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)
        wp = torch.ops.aten._convert_weight_to_int4pack(packed_in, 8)
        sz = torch.randn(K // 128, N, 2, device="cuda").to(torch.bfloat16)
        x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        torch.ops.aten._weight_int4pack_mm(x, wp, 128, sz)
        n = _copies(K * N // 2)
        sets = [(x, wp.clone(), 128, sz.clone()) for _ in range(n)]
        us = _time(torch.ops.aten._weight_int4pack_mm, sets)
        return {"us": us, "bytes": K * N // 2 + sz.numel() * 2 + x.numel() * 2 + M * N * 2}
    except Exception as e:  # the op's signature and layouts changed across torch versions
        return {"missing": f"{type(e).__name__}: {e}"[:120]}


def _safe(fn: Callable[..., dict], *a: Any, **kw: Any) -> dict:
    try:
        return fn(*a, **kw)
    except Exception as e:  # one failing variant must not end the run
        return {"missing": f"{type(e).__name__}: {e}"[:200], "trace": traceback.format_exc()[-800:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only N = K = 8192")
    ap.add_argument("--sweep", action="store_true", help="also time tilings and split-K counts at 8192^2")
    ap.add_argument("--json", type=Path, help="write every row here")
    ap.add_argument("--sweep-only", action="store_true", help="skip the shape table: the sweep alone")
    ap.add_argument("--sweep-ms", default="", help="comma-separated M values the sweep times (default: all)")
    ap.add_argument("--sweep-bits", default="4,8", help="weight widths the sweep times (default 4,8)")
    ap.add_argument("--sweep-filter", default="", help="only sweep configurations whose name contains this "
                    "(and the default)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    props = torch.cuda.get_device_properties(0)
    print(f"# mixed-input GEMM, {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}\n")
    big = copy_bandwidth(1 << 30)
    print(f"copy bandwidth (1 GB D2D, read + write): {big:.0f} GB/s\n")
    rows, out, bad = [], [], 0
    for name, K, N in [] if args.sweep_only else SHAPES[:1] if args.quick else SHAPES:
        for M in MS:
            res: dict[str, dict] = {label: _safe(ours, K, N, M, b, g, dt) for label, b, g, dt in OURS}
            res["cuBLAS fp16"] = _safe(dense, K, N, M, torch.float16)
            res["cuBLAS bf16"] = _safe(dense, K, N, M, torch.bfloat16)
            res["torch int4"] = _safe(torch_int4, K, N, M)
            for label, r in res.items():
                if "us" in r:
                    r.update(rates(r))
                out.append({"shape": name, "K": K, "N": N, "M": M, "kernel": label, **r})
                if "us" not in r:
                    rows.append([name, M, label, "", "", "", "", "", r["missing"][:60]])
                    continue
                gbps = r["GBps"]
                vs16 = res["cuBLAS fp16"].get("us", float("nan")) / r["us"]
                vs_bf = res["cuBLAS bf16"].get("us", float("nan")) / r["us"]
                tol = 2e-3 if "fp16" in label else 1.2e-2
                note = r.get("config", "")
                if "err" in r:
                    note += f" err {r['err']:.1e}"
                    if not r["err"] <= tol:
                        bad += 1
                        note += " FAIL"
                rows.append([name, M, label, f"{r['us']:.1f}", f"{gbps:.0f}", f"{r['pct_copy']:.0f}%",
                             f"{vs16:.2f}x", f"{vs_bf:.2f}x", note])
    print(markdown_table(["shape", "M", "kernel", "µs", "GB/s", "% copy", "vs cuBLAS fp16", "vs cuBLAS bf16",
                          "notes"], rows))
    if args.sweep:
        K = N = 8192
        only_ms = {int(m) for m in args.sweep_ms.split(",") if m}
        only_bits = {int(b) for b in args.sweep_bits.split(",") if b}
        for label, bits, group in (("W4A16 g128 fp16", 4, 128), ("W8A16 pc fp16", 8, None)):
            if bits not in only_bits:
                continue
            srows = []
            for M in ((1, 2, 4, 8, 16) if bits == 4 else (1, 8, 16)):
                if only_ms and M not in only_ms:
                    continue
                for cfg in sweep_configs(bits, M):
                    if cfg is not None and args.sweep_filter not in cfg.name:
                        continue
                    r = _safe(ours, K, N, M, bits, group, torch.float16, config=cfg)
                    name = r.get("config", cfg.name if cfg else "?") + ("" if cfg else " (default)")
                    if "us" in r:
                        r.update(rates(r))
                    out.append({"sweep": True, "kernel": label, "K": K, "N": N, "M": M, **r, "config": name})
                    if "us" in r:
                        srows.append([M, name, r["grid"], f"{r['us']:.2f}", f"{r['GBps']:.0f}", f"{r['pct_copy']:.0f}%",
                                      f"{r['err']:.1e}"])
                    else:
                        srows.append([M, name, "", "", "", "", r["missing"][:60]])
            srows.sort(key=lambda r: (r[0], float(r[3]) if r[3] else float("inf")))
            print(f"\n## {label}, N = K = 8192: candidate configurations (fastest first per M)\n")
            print(markdown_table(["M", "config", "grid", "µs", "GB/s", "% copy", "err"], srows))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))
    print(f"\n{bad} correctness failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
