"""`tilecraft bench` command line, without a GPU."""
import subprocess
import sys

import pytest

from tilecraft.bench.cli import build_parser, default_contenders, run


def test_help_and_list(capsys):
    assert run(["gemm", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--against" in out and "--shapes" in out and "--out" in out
    assert run(["list"]) == 0
    out = capsys.readouterr().out
    assert "cublas" in out and "llama70b" in out and "w4a16" in out


def test_parse_issue_command():
    a = build_parser().parse_args(
        ["gemm", "--dtype", "bf16", "--shapes", "llama8b", "--against", "cublas,triton", "--out", "results/"]
    )
    assert a.against == ["cublas", "triton"] and a.shapes == "llama8b" and a.out == "results/"
    assert a.m is None and a.rep_ms == 100.0
    assert build_parser().parse_args(["gemm", "--m", "1,16"]).m == [1, 16]


def test_defaults_include_missing_contenders():
    assert default_contenders("bf16")[:3] == ["cublas", "triton", "tilecraft"]
    assert "int4_mm" in default_contenders("w4a16")


def test_bad_usage_returns_nonzero():
    assert run(["nosuch"]) != 0


def test_no_gpu_exit_code(no_cuda, capsys):
    assert run(["gemm", "--shapes", "square"]) == 2
    assert "no CUDA" in capsys.readouterr().err


def test_top_level_cli():
    r = subprocess.run([sys.executable, "-m", "tilecraft.cli", "bench", "gemm", "--help"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "--against" in r.stdout


def test_import_is_light():
    code = ("import sys, tilecraft, tilecraft.bench, tilecraft.bench.gemm, tilecraft.bench.report, "
            "tilecraft.bench.cli; print(sorted(m for m in ('torch', 'matplotlib', 'triton') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_gemm_command_end_to_end_on_cpu(tmp_path, monkeypatch, capsys):
    """The issue's command, with the GPU parts swapped for CPU stand-ins: table, JSON, Markdown, PNG."""
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    import tilecraft.bench.cli as cli
    import tilecraft.bench.gemm as gemm
    import tilecraft.bench.roofline as roofline
    from tilecraft.bench.contenders import Kernel, register_contender, unregister_contender
    from tilecraft.bench.gemm import GemmSweep
    from tilecraft.bench.timing import TimingResult

    real_sweep = gemm.run_gemm_sweep

    def cpu_sweep(shapes, dtype, contenders, **kw):
        kw.update(device="cpu", timer=lambda fn, sets: TimingResult.from_samples([1.0, 1.1, 0.9]),
                  l2_bytes=1 << 16)
        return real_sweep(shapes, dtype, contenders, **kw)

    ab = lambda x: (x.a, x.b)  # noqa: E731
    mm = lambda a, b: (a.float() @ b.float()).to(a.dtype)  # noqa: E731
    register_contender("cpu_cublas", lambda p: Kernel(fn=mm, prepare=ab, label="cpu"))
    monkeypatch.setattr(cli, "_has_cuda", lambda: True)
    monkeypatch.setattr(gemm, "run_gemm_sweep", cpu_sweep)
    monkeypatch.setattr(roofline, "measure_ceilings",
                        lambda dtypes: roofline.Ceilings("fake", 1e9, {d: 1e10 for d in dtypes}))
    try:
        rc = run(["gemm", "--dtype", "bf16", "--shapes", "64x64x64,32x64x128", "--against", "cpu_cublas,nosuch",
                  "--baseline", "cpu_cublas", "--out", str(tmp_path)])
    finally:
        unregister_contender("cpu_cublas")
    out = capsys.readouterr().out
    assert rc == 0
    assert "| 64x64x64" in out and "MISSING" in out and "no contender named 'nosuch'" in out
    stem = "gemm_bf16_64x64x64-32x64x128"
    for ext in ("json", "md", "png"):
        assert (tmp_path / f"{stem}.{ext}").exists()
    sw = GemmSweep.load_json(tmp_path / f"{stem}.json")
    assert sw.meta["command"].startswith("tilecraft bench gemm --dtype bf16")
    assert sw.ceilings is not None and len(sw.records) == 4
    assert {r.status for r in sw.records} == {"ok", "missing"}


def test_demo_gemm_without_gpu(no_cuda, capsys):
    from tilecraft.bench import demo_gemm

    assert demo_gemm() is None
    assert "skipped (no CUDA device)" in capsys.readouterr().out
