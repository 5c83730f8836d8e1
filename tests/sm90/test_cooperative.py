"""Launches whose CTAs wait on each other are cooperative, and survive a GPU shared with another such launch.

The scenario (tilecraft.bench.residency): a kernel holds every SM and frees them one at a time; the same GEMM
goes on a low-priority stream, then on a high-priority one. Plainly launched, the two grids can split the SMs
between them and wait on each other's missing CTAs for good (measured on an H100: RESULTS.md, thirty-sixth
session); cooperatively, each grid starts whole. Each case runs in a child process under a timeout, so a hang
fails the test instead of the session.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")


def _hopper() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


@pytest.mark.gpu
@pytest.mark.parametrize("path", ["rs", "dense", "streamk"])
def test_gpu_cooperative_launches_survive_priority_streams(path: str) -> None:
    if not _hopper():
        pytest.skip("needs sm_90")
    try:
        r = subprocess.run([sys.executable, "-m", "tilecraft.bench.residency", path, "coop"], capture_output=True,
                           text=True, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{path}: the cooperative launches did not finish in 240 s (a residency deadlock)")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{path} coop: finished" in r.stdout
