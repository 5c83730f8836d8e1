#!/usr/bin/env python
"""Where the time between decoding kernels goes: per-CTA timelines of the small-M mixed-input GEMM launched
back to back, plainly and as programmatic dependent launches (issue 9, tenth session's open question: why
PDL made W4 at M <= 8 slower).

    PYTHONPATH=$PWD python3 benchmarks/probe_pdl_timeline.py [--ms 1,8,16] [--variants 'tiles=2;warps=8']
        [--modes plain,'pdl 2/16'] [--calls 24] [--json F]

Each call gets its own int64 timeline (``mixed_gemm_kernel(timeline=...)``): thread 0 of every CTA records its
SM and the global timer at entry, after ``griddep_wait`` (PDL) and at its end. ``--calls`` launches (weights
rotating over copies > 3x L2, so each call streams its weight from HBM) are queued behind a GPU spin, so
they run back to back; every output is checked against float64. For the steady-state calls (the first
four and the last two left out) the table gives, averaged over calls, in µs:

* ``period``: from one kernel's last CTA end to the next one's (the time per call of the stream);
* ``gap``: from a kernel's last CTA end to the first CTA of the next starting its work (after its wait);
* ``ramp``: from that first start to the moment every CTA of the kernel has started;
* ``work``: median CTA time from its start of work to its end, and ``tail``: from the median CTA end to the last;
* ``early``: CTAs of the next kernel already resident when the previous one ended (PDL);
* ``per SM``: the fewest and most CTAs of one kernel an SM ran.

Modes: plain launches; PDL with MixedGemm's occupancy cap (``mixed.pdl_ctas_per_sm``) and 0, 2 or 4
sixteenths of the weights prefetched; PDL without the cap (how the tenth session launched them).
"""
from __future__ import annotations

import argparse
import json
import statistics as st
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import bench_mixed as BM  # noqa: E402
from tilecraft.bench.report import markdown_table  # noqa: E402
from tilecraft.bench.timing import _calibrate_sleep  # noqa: E402
from tilecraft.gemm import mixed  # noqa: E402

FORMATS = {"W4A16 g128": (4, 128), "W8A16 pc": (8, None)}
TOL = 1.2e-2
#: (label, the PDL prefetch in sixteenths or None for plain launches, occupancy capped)
MODES = (("plain", None, False), ("pdl 0/16 uncapped", 0, False), ("pdl 0/16", 0, True), ("pdl 2/16", 2, True),
         ("pdl 4/16", 4, True))


def launches(pws: list, x: Any, cfg: Any, pdl: int | None, capped: bool, calls: int) -> tuple[list, list, list]:
    """(bound launches, their outputs, their timelines) for `calls` calls rotating over pws; a PDL launch
    `capped` at MixedGemm's occupancy (``mixed.pdl_ctas_per_sm``) or not."""
    blocks, splits = mixed.launch_grid(x, pws[0], cfg)
    kcfg = replace(cfg, splits=None)
    cap = mixed.pdl_ctas_per_sm(blocks * splits, mixed._sm_count(x)) if pdl is not None and capped else None
    runs, ys, tls = [], [], []
    for i in range(calls):
        pw = pws[i % len(pws)]
        y = torch.empty(x.shape[0], pw.shape[1], dtype=x.dtype, device=x.device)
        tl = torch.zeros(blocks * splits, 4, dtype=torch.int64, device=x.device)
        args = (*mixed._kernel_args(x, pw, None, y, cfg, splits > 1, kcfg, pdl), tl)
        bound = mixed.mixed_gemm_kernel.bind(*args, grid=(blocks, splits), block=(cfg.threads,), pdl=pdl is not None,
                                             max_ctas_per_sm=cap)
        runs.append((bound, args))
        ys.append(y)
        tls.append(tl)
    return runs, ys, tls


def summarize(tls: list) -> dict:
    """The table's figures (µs, averaged over the steady-state calls) from the calls' timelines."""
    t = [tl.cpu() for tl in tls]
    ends = [int(a[:, 3].max()) for a in t]
    rows = []
    for i in range(4, len(t) - 2):
        a, nxt = t[i], t[i + 1]
        start = a[:, 2]
        cta_end = a[:, 3]
        per_sm: dict[int, int] = {}
        for s in a[:, 0].tolist():
            per_sm[s] = per_sm.get(s, 0) + 1
        rows.append({
            "period": (ends[i + 1] - ends[i]) / 1e3,
            "gap": (int(nxt[:, 2].min()) - ends[i]) / 1e3,
            "ramp": (int(start.max()) - int(start.min())) / 1e3,
            "work": float((cta_end - start).double().median()) / 1e3,
            "tail": (ends[i] - float(cta_end.double().median())) / 1e3,
            "early": int((nxt[:, 1] < ends[i]).sum()),
            "sm_min": min(per_sm.values()), "sm_max": max(per_sm.values()), "sms": len(per_sm),
        })
    return {k: st.mean(r[k] for r in rows) for k in rows[0]}


def probe(label: str, M: int, calls: int, variant: dict, modes: list[str]) -> list[dict]:
    bits, group = FORMATS[label]
    K = N = 8192
    pws = BM._packed(K, N, bits, group, torch.bfloat16)
    x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    cfg = replace(mixed.pick_mixed_config(pws[0].format, M, K, N), **variant)
    try:
        cfg.validate(pws[0].format, K, N, M)
    except ValueError as e:
        print(f"skipped at M = {M}: {e}")
        return []
    spin = int(20.0 * _calibrate_sleep())                                 # 20 ms: the host queues every call
    out = []
    for mode, pdl, capped in (m for m in MODES if m[0] in modes):
        runs, ys, tls = launches(pws, x, cfg, pdl, capped, calls)
        for bound, args in runs[:2]:                                      # compile, warm
            bound(*args)
        torch.cuda.synchronize()
        for _rep in range(3):                                             # the last repetition is kept
            torch.cuda._sleep(spin)
            for bound, args in runs:
                bound(*args)
            torch.cuda.synchronize()
        err = max(float(((y.double() - ref).norm() / ref.norm()))
                  for y, ref in ((ys[i], x.double() @ pws[i % len(pws)].dequantize(torch.float64)) for i in (0, calls - 1)))
        s = summarize(tls)
        out.append({"format": label, "M": M, "config": cfg.name, "grid": tuple(runs[0][0].grid), "mode": mode,
                    "err": err, **s,
                    # one steady-state call and its predecessor, per CTA: SM, entry, start of work, end (ns)
                    "raw": [tls[calls // 2 - 1].cpu().tolist(), tls[calls // 2].cpu().tolist()]})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ms", default="1,8,16")
    ap.add_argument("--formats", default="W4A16 g128,W8A16 pc")
    ap.add_argument("--calls", type=int, default=24)
    ap.add_argument("--variants", default="", help="semicolon-separated MixedConfig overrides to probe beside "
                    "tc.gemm's pick, e.g. 'tiles=2;tiles=2,warps=8;splits=2'")
    ap.add_argument("--modes", default=",".join(m[0] for m in MODES), help="comma-separated modes to time")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    print(f"# PDL timelines, {torch.cuda.get_device_name(0)}, N = K = 8192, bf16\n")
    rows, out, bad = [], [], 0
    for label in args.formats.split(","):
        for M in (int(m) for m in args.ms.split(",")):
            variants = [{}] + [{k: int(v) for k, v in (kv.split("=") for kv in var.split(","))}
                               for var in args.variants.split(";") if var]
            for r in (r for var in variants for r in probe(label, M, args.calls, var, args.modes.split(","))):
                out.append(r)
                ok = r["err"] <= TOL
                bad += not ok
                rows.append([r["format"], r["M"], r["config"], "x".join(map(str, r["grid"])), r["mode"],
                             *(f"{r[k]:.2f}" for k in ("period", "gap", "ramp", "work", "tail")), f"{r['early']:.0f}",
                             f"{r['sm_min']:.1f}-{r['sm_max']:.1f} on {r['sms']:.0f}", f"{r['err']:.1e}{'' if ok else ' FAIL'}"])
    print(markdown_table(["format", "M", "config", "grid", "mode", "period µs", "gap µs", "ramp µs", "work µs",
                          "tail µs", "early CTAs", "CTAs per SM", "err"], rows))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))
    print(f"\n{bad} correctness failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
