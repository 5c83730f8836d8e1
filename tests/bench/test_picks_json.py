"""benchmarks/picks_json.py: a checkout's picks at issue 8's 40 LLM shapes, written as configurations that
probe_llm.py --baseline reads back into the same Sm90Config."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
from tilecraft.gemm import Sm90Config, pick_sm90_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_picks_round_trip(tmp_path):
    out = tmp_path / "picks.json"
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "picks_json.py"), str(out)], capture_output=True,
                         text=True, check=True)
    assert str(ROOT / "tilecraft") in run.stdout
    picks = json.loads(out.read_text())
    assert len(picks) == 40
    for shape, expr in picks.items():
        M, N, K = (int(x) for x in shape.split("x"))
        assert eval(expr, {"S": Sm90Config}) == pick_sm90_config(M, N, K, 1, 132), shape


def test_refuses_a_checkout_it_did_not_import(tmp_path):
    # no tilecraft under --checkout: the installed one loads, and the script says so instead of writing its picks
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "picks_json.py"), str(tmp_path / "p.json"),
                          "--checkout", str(tmp_path)], capture_output=True, text=True)
    assert run.returncode != 0 and "not from" in run.stderr + run.stdout
