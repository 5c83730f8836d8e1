"""Tables, JSON and PNG from fake records."""
import json

import pytest

from tilecraft.bench.gemm import GemmRecord, GemmSweep
from tilecraft.bench.report import format_summary, format_table, format_wide_table, plot_ratios, write_outputs
from tilecraft.bench.roofline import Ceilings
from tilecraft.bench.timing import TimingResult


def _rec(shape, contender, ms=None, status="ok", detail="", ratio=None):
    r = GemmRecord(shape, 4096, 4096, 4096, "bf16", contender, status, detail=detail, tol=5e-3)
    if ms is not None:
        r.set_timing(TimingResult.from_samples([ms * 0.98, ms, ms * 1.02]), 2 * 4096**3, 3 * 4096 * 4096 * 2)
        r.rel_err = 1.5e-3
        r.ratio = ratio
        r.floor_ms = 0.174
        r.pct_floor = 100 * 0.174 / ms
        r.bound = "compute"
    return r


def _sweep():
    recs = [
        _rec("4096x4096x4096", "cublas", 0.200, ratio=1.0),
        _rec("4096x4096x4096", "triton", 0.250, ratio=0.8),
        _rec("4096x4096x4096", "tilecraft", status="missing", detail="tilecraft GEMM not available yet"),
        _rec("llama8b.qkv M=1", "cublas", 0.020, ratio=1.0),
        _rec("llama8b.qkv M=1", "triton", status="wrong", detail="relative error 0.5 > tolerance 0.005; Triton"),
        _rec("llama8b.qkv M=1", "tilecraft", status="missing", detail="tilecraft GEMM not available yet"),
    ]
    recs[4].rel_err = float("inf")
    ceil = Ceilings("fake H200", 4.3e12, {"bf16": 790e12}, {"copy": "fake"})
    return GemmSweep(meta={"dtype": "bf16", "device": "fake H200", "baseline": "cublas", "command": "x"},
                     records=recs, ceilings=ceil)


def test_table_contents():
    t = format_table(_sweep().records)
    lines = t.splitlines()
    assert lines[0].startswith("| shape") and "TFLOP/s" in lines[0] and "% floor" in lines[0]
    assert len(lines) == 2 + 6
    assert all(len(l) == len(lines[0]) for l in lines)  # aligned columns
    row = [l for l in lines if "triton" in l and "4096x" in l][0]
    assert "0.80x" in row and "250.0" in row and "549.8" in row  # 2*4096^3/0.25ms
    assert "MISSING" in t and "WRONG" in t and "tilecraft GEMM not available yet" in t
    assert "% floor" not in format_table(_sweep().records, show_floor=False)


def test_wide_table_and_summary():
    t = format_wide_table(_sweep().records)
    assert "triton/cublas" in t and "0.80x" in t and "WRONG" in t and "MISSING" in t
    s = format_summary(_sweep())
    assert "triton: geomean ratio 0.80x over 1 shapes (1 ok, 1 wrong)" in s
    assert "tilecraft" in s and "not available" in s


def test_json_round_trip(tmp_path):
    sw = _sweep()
    p = sw.save_json(tmp_path / "sub" / "r.json")
    raw = json.loads(p.read_text())  # strict JSON: inf errors are written as the string "inf"
    assert raw["format"] == "tilecraft.bench.gemm/1"
    assert raw["records"][4]["rel_err"] == "inf"
    back = GemmSweep.load_json(p)
    assert back.records == sw.records
    assert back.ceilings == sw.ceilings
    assert back.meta == sw.meta


def test_png_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    p = plot_ratios(_sweep().records, tmp_path / "r.png", title="t")
    data = p.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    from matplotlib.image import imread

    img = imread(p)
    assert img.shape[0] > 100 and img.shape[1] > 100


def test_write_outputs(tmp_path):
    pytest.importorskip("matplotlib")
    w = write_outputs(_sweep(), tmp_path / "out", "gemm_bf16_square")
    assert "plot_error" not in w
    for k in ("json", "md", "png"):
        assert w[k].exists() and w[k].name.startswith("gemm_bf16_square")
    assert "| shape" in w["md"].read_text()


def test_plot_many_shapes(tmp_path):
    pytest.importorskip("matplotlib")
    recs = []
    for i in range(88):
        recs.append(_rec(f"s{i}", "cublas", 1.0, ratio=1.0))
        recs.append(_rec(f"s{i}", "triton", 1.0 + i / 100, ratio=1 / (1.0 + i / 100)))
    assert plot_ratios(recs, tmp_path / "big.png").stat().st_size > 1000
