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
