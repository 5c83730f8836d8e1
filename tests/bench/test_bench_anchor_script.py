"""benchmarks/bench_anchor.py: argument handling and the Markdown it writes (fed fake sweeps)."""
import pytest
from benchmark_script import load_benchmark

from tilecraft.bench.gemm import GemmRecord, GemmSweep, environment
from tilecraft.bench.roofline import Ceilings
from tilecraft.bench.timing import TimingResult


def _load():
    return load_benchmark("bench_anchor")


def test_args():
    m = _load()
    a = m.parse_args([])
    assert a.dtypes == ["fp16", "bf16", "fp32"] and a.square == [1024, 2048, 4096, 8192]
    assert a.m == [1, 16, 128, 1024, 4096] and a.against == ["cublas", "triton"] and a.out == "results"
    q = m.parse_args(["--quick", "--out", "x"])
    assert q.dtypes == ["bf16"] and q.out == "x"


def test_markdown_block():
    m = _load()
    recs = []
    for c, ms in (("cublas", 0.2), ("triton", 0.25)):
        r = GemmRecord("4096x4096x4096", 4096, 4096, 4096, "bf16", c, "ok", detail=f"{c} label")
        r.set_timing(TimingResult.from_samples([ms]), 2 * 4096**3, 3 * 4096 * 4096 * 2)
        r.ratio, r.pct_floor = 0.2 / ms, 50.0
        recs.append(r)
    recs.append(GemmRecord("llama8b.qkv M=1", 1, 6144, 4096, "bf16", "triton", "wrong", detail="rel err"))
    sw = GemmSweep(meta={"dtype": "bf16"}, records=recs)
    env = environment("cpu")
    ceil = Ceilings("fake", 3.0e12, {"bf16": 700e12, "fp8": 1300e12})
    copies = [{"bytes": 1 << 30, "TBps": 3.0}, {"bytes": 4 << 30, "error": "OOM"}]
    md = m._markdown(env, "python benchmarks/bench_anchor.py --out r", ceil, copies, {"bf16": sw}, 150.0)
    assert md.startswith("### ")
    assert "`python benchmarks/bench_anchor.py --out r` (2.5 min)" in md
    assert "D2D copy 3.00 TB/s" in md and "cuBLAS bf16 8192³ 700 TFLOP/s" in md
    assert "1024 MiB 3.00 TB/s" in md and "4096 MiB failed" in md
    assert "#### bf16" in md and "0.80x" in md and "- cublas: cublas label" in md
    assert "Failures:" in md and "llama8b.qkv M=1 triton: wrong: rel err" in md


def test_no_gpu_exit(capsys):
    try:
        import torch

        if torch.cuda.is_available():
            pytest.skip("has a GPU")
    except ImportError:
        pytest.skip("no torch")
    assert _load().main(["--out", "unused"]) == 2
