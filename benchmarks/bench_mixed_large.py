#!/usr/bin/env python
"""The mixed-input GEMM at large M on Hopper (tilecraft/gemm/sm90_mixed.py, sm90_mixed_rs.py) against the dense GEMMs.

    PYTHONPATH=$PWD python3 benchmarks/bench_mixed_large.py [--ms 128,1024,4096] [--rounds R] [--json out.json]

y = x (M, K) @ W (K, N) with N = K = 8192 and M in {128, 1024, 4096}, bf16 activations:

* ours: tc.gemm(x, packed_w) for W4A16 g128 and W8A16 per-channel (the Hopper kernels from
  ``sm90_mixed.SM90_MIN_M`` rows on; the ``config`` column names the tiling it ran: ``rs_...`` is the
  register-A kernel); ``--rings`` / ``--rs`` add fixed tilings of either kernel;
* tilecraft dense: tc.gemm(x, w) with a bf16 (K, N) weight (the sm90 TMA + wgmma kernel);
* cuBLAS: torch.matmul(x, w).

Each contender is checked against float64 first (ours: x @ dequantize(W) in bf16, the operand the kernel
multiplies; dense: x @ w) and skipped with the error if it is off by more than 1e-2 relative. Timings are
CUDA-event medians (tilecraft.bench.timing; with --rounds, every contender of an M is timed in turn R times
and the median of its R medians is reported) rotating among enough copies of the weight (and of x) that one
rotation is > 3x L2, so W comes from HBM as in a model's forward pass. Ratios are time(dense) / time(ours):
above 1 means the quantized GEMM is faster. Prints a Markdown table; ``--json`` writes every row.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import tilecraft as tc  # noqa: E402
import tilecraft.quant as Q  # noqa: E402
from tilecraft.bench.report import markdown_table  # noqa: E402
from tilecraft.bench.timing import Timer, in_turn  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mixed import _copies, _safe  # noqa: E402  (the small-M script's rotation count and guard)

K = N = 8192
MS = [128, 1024, 4096]
#: (label, bits, group, zero points)
OURS = [("W4A16 g128", 4, 128, False), ("W8A16 pc", 8, None, False)]
DTYPE = torch.bfloat16
TIMER = Timer(warmup_ms=25, rep_ms=100, min_reps=20)
TOL = 1e-2
#: --no-check: time our contenders whatever their error (probes that leave out work on purpose, e.g.
#: benchmarks/patches/rs_skip_convert.diff)
NO_CHECK = False


#: the --no-... options: what tc.gemm ran before one of sm90_mixed_rs's pick rules, with that function left out of its
#: picks and split_plan's: (option, label, function, what it added)
LEFT_OUT = (("no-ragged", "no ragged", "_ragged_or", "the ragged x tiles"),
            ("no-stream-k", "no stream-K", "_stream_k_or", "stream-K"),
            ("no-three", "no three", "_three_or", "the three-consumer tiles"),
            ("no-three-split", "no three split", "_three_firsts", "split_plan's three-consumer first launches"),
            ("no-three-sk", "no three sk", "_three_stream_k_or", "the three-consumer tiles in stream-K"),
            ("no-narrow", "no narrow", "_narrow_three_tiles", "three consumers by at most 192 rows of x"))
#: what stands in for a function left out: no candidates, no tiles, or (the ``_or`` rules) the tiling it was given
STAND_IN = {"_three_firsts": lambda *a: [], "_narrow_three_tiles": lambda *a: None}


def _time(fn: Callable[..., Any], sets: list[tuple]) -> float:
    """Median microseconds of fn over the rotation sets."""
    return TIMER(fn, sets).median_ms * 1e3


def _err(y: Any, ref: Any) -> float:
    return float((y.double() - ref).norm() / ref.norm())


def ours(M: int, bits: int, group: int | None, ring: int = -1, rs: Any = None, reduce: str = "", zp: bool = False,
         unsplit: bool = False, left_out: str = "", three_split: bool = False) -> dict:
    """tc.gemm on the packed weight (ring < 0), or sm90_mixed_gemm with the heuristic's tiling given a
    cp.async ring of `ring` k-tiles (0: the register ring the heuristic picked), or with the register-A
    kernel's tiling `rs` (sm90_mixed_rs.RsConfig, or a function of the weight's PackedFormat giving one).
    ``reduce``: tc.gemm's pick with its split-K partials summed by the reduction kernel instead of in the kernel,
    launched as a programmatic dependent launch ("pdl") or plainly ("plain"). ``zp``: unsigned weights with zero
    points. ``unsplit``: the other choice of sm90_mixed_rs.split_rows: tc.gemm's pick with M in one launch where it
    splits M in two, else 256 q rows (q = (M - 1) // 256) in 2x1-cluster tiles and the rest in a launch of their
    own. ``left_out``: what tc.gemm ran
    before one of sm90_mixed_rs's pick rules, this function of it left out (``LEFT_OUT``, ``STAND_IN``).
    ``three_split``: the three-consumer first launch of fewest estimated rounds (with the rest's), whatever
    split_plan's bar says."""
    from tilecraft.gemm.sm90_mixed import (
        SM90_MIN_M, _prepare, pick_config, pick_sm90_mixed_config, sm90_mixed_gemm, use_sm90_mixed, with_ring,
    )
    from tilecraft.gemm import sm90_mixed_rs
    from tilecraft.gemm.sm90_mixed_rs import RsLaunch

    w = torch.randn(K, N, device="cuda") * 0.02
    pw0 = Q.pack(Q.quantize(w, bits, group, zero_point=zp), DTYPE)
    n = _copies(pw0.nbytes)
    pws = [pw0] + [Q.PackedWeight(pw0.qweight.clone(), pw0.scales.clone(),
                                  None if pw0.zeros is None else pw0.zeros.clone(), pw0.shape, pw0.format)
                   for _ in range(n - 1)]
    x = torch.randn(M, K, device="cuda").to(DTYPE)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    cfg = pick_config(pw0.format, M, N, K, sms)                           # what tc.gemm runs
    M1, first = 0, None                                                   # rows of a split's first launch, its tiling
    if rs is not None:
        cfg = rs(pw0.format) if callable(rs) else rs
        fn = lambda xx, p: sm90_mixed_gemm(xx, p, None, cfg)  # noqa: E731
    elif left_out:
        choice = getattr(sm90_mixed_rs, left_out)
        setattr(sm90_mixed_rs, left_out, STAND_IN.get(left_out, lambda cfg, *a: cfg))
        try:
            run = _prepare(x, pw0, None, None)
            cfg = pick_config(pw0.format, M, N, K, sms)
            M1, first = sm90_mixed_rs.split_plan(M, N, K, sms, pw0.format)
        finally:
            setattr(sm90_mixed_rs, left_out, choice)
        fn = lambda xx, p: run(xx, p, None)  # noqa: E731
    elif unsplit or three_split:
        plan = sm90_mixed_rs.split_plan
        if three_split:                           # the fewest rounds of a three-consumer first launch, bar or not
            firsts = sm90_mixed_rs._three_firsts(M, N, K, sms, pw0.format)
            if not firsts:
                return {"missing": "no three-consumer first launch fills its rounds"}
            rest_rounds = sm90_mixed_rs._rest_rounds
            M1, first, _rounds = min(firsts, key=lambda f: f[2] + rest_rounds(M - f[0], N, K, sms, pw0.format))
        else:
            chosen = plan(M, N, K, sms, pw0.format)[0]
            M1, first = (0, None) if chosen else (256 * ((M - 1) // 256), sm90_mixed_rs.PAIRS)   # the other choice
            if not chosen and M1 == 0:
                return {"missing": "M <= 256: no other choice"}
        sm90_mixed_rs.split_plan = lambda *a: (M1, first)
        try:
            run = _prepare(x, pw0, None, None)
        finally:
            sm90_mixed_rs.split_plan = plan
        fn = lambda xx, p: run(xx, p, None)  # noqa: E731
    elif reduce:
        RsLaunch.sum_in_kernel, RsLaunch.pdl_reduce = False, reduce == "pdl"
        try:
            run = _prepare(x, pw0, None, cfg)
        finally:
            RsLaunch.sum_in_kernel, RsLaunch.pdl_reduce = True, True
        fn = lambda xx, p: run(xx, p, None)  # noqa: E731
    elif ring >= 0:
        cfg = pick_sm90_mixed_config(pw0.format, M, N, K, sms)
        cfg = with_ring(cfg, pw0.format, ring) if ring else cfg
        fn = lambda xx, p: sm90_mixed_gemm(xx, p, None, cfg)  # noqa: E731
    else:
        fn = tc.gemm
        M1, first = sm90_mixed_rs.split_plan(M, N, K, sms, pw0.format)
    y = fn(x, pw0)
    torch.cuda.synchronize()
    err = _err(y, x.double() @ pw0.dequantize(DTYPE).double())
    if err > TOL and not NO_CHECK:
        return {"missing": f"wrong: relative error {err:.2e}"}
    sets = [(x, p) for p in pws]
    name = cfg.name
    if M1:
        rest = pick_config(pw0.format, M - M1, N, K, sms).name if M - M1 >= SM90_MIN_M else "small-M"
        name = f"{M1} rows {(first or sm90_mixed_rs.PAIRS).name} + {M - M1} rows {rest}"
    path = "sm90" if ring >= 0 or rs is not None or reduce or use_sm90_mixed(x, pw0) else f"small-M (M < {SM90_MIN_M} or not sm_90)"
    return {"timer": lambda: _time(fn, sets), "err": err, "path": path, "config": name if path == "sm90" else "-",
            "copies": n}


def _three_sk(bm: int, stream_k: int) -> Callable[[Any], Any]:
    """The register-A tiling of three consumers by bm rows of x in stream-K mode stream_k, for a weight format."""
    from dataclasses import replace

    from tilecraft.gemm.sm90_mixed_rs import three_consumers
    return lambda fmt: replace(three_consumers(bm, fmt), stream_k=stream_k)


def dense(M: int, fn: Callable[[Any, Any], Any]) -> dict:
    n = _copies(K * N * 2)
    ws = [torch.randn(K, N, device="cuda").to(DTYPE) for _ in range(n)]
    x = torch.randn(M, K, device="cuda").to(DTYPE)
    y = fn(x, ws[0])
    torch.cuda.synchronize()
    err = _err(y, x.double() @ ws[0].double())
    if err > TOL:
        return {"missing": f"wrong: relative error {err:.2e}"}
    sets = [(x, w) for w in ws]
    return {"timer": lambda: _time(fn, sets), "err": err, "copies": n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ms", default=",".join(map(str, MS)), help="comma-separated M values")
    ap.add_argument("--json", type=Path, help="write every row here")
    ap.add_argument("--rings", default="", help="also time the Hopper kernel with these cp.async ring lengths "
                    "(comma-separated; 0: the heuristic's register ring), e.g. 0,4,6")
    ap.add_argument("--rs", default="", help="also time the register-A kernel (sm90_mixed_rs) with these tilings, "
                    "comma-separated BLK_M:STAGES:DEPTH[:SPLITS[:CLUSTER]] (x rows, x stages, k-tiles of words in flight, "
                    "slices of K, CTAs sharing each x k-tile), e.g. 256:6:2,128:8:4:2,256:6:2:1:2")
    ap.add_argument("--rs-configs", default="", help="also time these register-A tilings, ';'-separated RsConfig "
                    "expressions (R = RsConfig), e.g. 'R(blk_n=192, blk_m=128, stages=8, depth=3, consumer_regs=152, splits=3)'")
    ap.add_argument("--three-sk", default="", help="also time three consumers by bm rows of x in stream-K mode s "
                    "(sm90_mixed_rs.three_consumers(bm, format) with stream_k=s), comma-separated bm:s, "
                    "e.g. 224:1,208:2")
    ap.add_argument("--reductions", action="store_true", help="also time the picks with their split-K partials "
                    "summed by the reduction kernel, launched as a programmatic dependent launch and plainly (tc.gemm "
                    "sums them in the kernel where every work unit fits on the SMs)")
    for option, _label, fn, what in LEFT_OUT:
        ap.add_argument(f"--{option}", action="store_true", help=f"also time what tc.gemm ran before {what} "
                        f"(sm90_mixed_rs.{fn} left out of its picks and split_plan's)")
    ap.add_argument("--three-split", action="store_true", help="also time M split into a three-consumer first launch "
                    "(the fewest estimated rounds, whatever split_plan's bar says) and the rest")
    ap.add_argument("--unsplit", action="store_true", help="also time sm90_mixed_rs.split_rows's other choice: "
                    "M in one launch where it splits M in two, else split in two")
    ap.add_argument("--rounds", type=int, default=1, help="time every contender of an M in turn this many times and "
                    "report the medians (the GPU's clock drifts over seconds; one timing after another inherits it)")
    ap.add_argument("--formats", default="", help="the weight formats instead of W4A16 g128 and W8A16 per-channel: "
                    "comma-separated BITS:GROUP[:zp] (GROUP 0: per channel), e.g. 4:128,8:0,4:32:zp")
    ap.add_argument("--nk", default="", help="N x K of the weight instead of 8192x8192, e.g. 28672x4096")
    ap.add_argument("--no-check", action="store_true", help="time our contenders even where they are wrong (for probes "
                    "that leave out work on purpose; the error column still shows it)")
    args = ap.parse_args()
    global NO_CHECK, N, K, OURS
    NO_CHECK = args.no_check
    if args.nk:
        N, K = (int(v) for v in args.nk.split("x"))
    if args.formats:
        OURS = []
        for spec in args.formats.split(","):
            f = spec.split(":")
            g = int(f[1]) or None
            zp = len(f) > 2 and f[2] == "zp"
            OURS.append((f"W{f[0]}A16 {'g' + f[1] if g else 'pc'}{' zp' if zp else ''}", int(f[0]), g, zp))
    rings = [int(r) for r in args.rings.split(",") if r]
    from tilecraft.gemm.sm90_mixed_rs import RsConfig
    rs = [RsConfig(blk_m=f[0], stages=f[1], depth=f[2], splits=f[3] if len(f) > 3 else 1,
                   cluster=f[4] if len(f) > 4 else 1) for f in
          ([int(v) for v in spec.split(":")] for spec in args.rs.split(",") if spec)]
    rs += [eval(e, {"R": RsConfig}) for e in args.rs_configs.split(";") if e.strip()]  # noqa: S307
    three_sk = [tuple(int(v) for v in spec.split(":")) for spec in args.three_sk.split(",") if spec]
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    props = torch.cuda.get_device_properties(0)
    print(f"# mixed-input GEMM at large M, N = {N}, K = {K}, bf16, {props.name}, {props.multi_processor_count} SMs, "
          f"torch {torch.__version__}\n")
    rows, out = [], []
    for M in [int(m) for m in args.ms.split(",")]:
        flop = 2 * M * N * K
        base = {"tilecraft dense": _safe(dense, M, lambda a, b: tc.gemm(a, b)),
                "cuBLAS": _safe(dense, M, torch.matmul)}
        res = {label: _safe(ours, M, b, g, zp=z) for label, b, g, z in OURS}
        for r in rings:
            res.update({f"{label} ring {r}": _safe(ours, M, b, g, r, zp=z) for label, b, g, z in OURS})
        for option, label_left, fn, _what in LEFT_OUT:
            if getattr(args, option.replace("-", "_")):
                res.update({f"{label} {label_left}": _safe(ours, M, b, g, zp=z, left_out=fn)
                            for label, b, g, z in OURS})
        if args.three_split:
            res.update({f"{label} three split": _safe(ours, M, b, g, zp=z, three_split=True)
                        for label, b, g, z in OURS})
        if args.unsplit:
            res.update({f"{label} other split": _safe(ours, M, b, g, zp=z, unsplit=True) for label, b, g, z in OURS})
        for r in ("pdl", "plain") if args.reductions else ():
            res.update({f"{label} {r} reduce": _safe(ours, M, b, g, -1, None, r, zp=z) for label, b, g, z in OURS})
        for bm, s in three_sk:
            res.update({f"{label} three {bm} sk{s}": _safe(ours, M, b, g, -1, _three_sk(bm, s), zp=z)
                        for label, b, g, z in OURS})
        for c in rs:
            res.update({f"{label} {c.name}": _safe(ours, M, b, g, -1, c, zp=z) for label, b, g, z in OURS})
        res.update(base)
        timed = in_turn({label: r["timer"] for label, r in res.items() if "timer" in r}, args.rounds)
        for label, times in timed.items():
            del res[label]["timer"]
            res[label]["us"] = statistics.median(times)
            if args.rounds > 1:
                res[label]["rounds_us"] = times
        for label, r in res.items():
            row = {"M": M, "N": N, "K": K, "contender": label, **r}
            out.append(row)
            if "us" not in r:
                rows.append([M, label, r["missing"], "", "", "", "", ""])
                continue

            def ratio(b: str) -> str:
                return f"{base[b]['us'] / r['us']:.2f}x" if "us" in base[b] else "-"

            rows.append([M, label, f"{r['us']:.1f}", f"{flop / r['us'] / 1e6:.0f}", ratio("tilecraft dense"),
                         ratio("cuBLAS"), f"{r['err']:.1e}", r.get("config", "")])
    print(markdown_table(["M", "contender", "time us", "TFLOP/s", "vs tc dense", "vs cuBLAS", "rel err", "config"],
                         rows))
    if args.json:
        args.json.write_text(json.dumps({"device": props.name, "rows": out}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
