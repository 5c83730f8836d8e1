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


def _told_of_more_sms(factor: int = 4) -> int:
    """An SM count above the GPU's: a launch planned for it makes cooperative grids that the driver refuses
    (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE), as where MPS leaves a process fewer SMs than the device reports."""
    return factor * torch.cuda.get_device_properties(0).multi_processor_count


@pytest.mark.gpu
@pytest.mark.parametrize("path", ["fused", "streamk"])
def test_gpu_refused_cooperative_grid_falls_back(path: str) -> None:
    """A dense launch whose cooperative grid the GPU cannot hold takes, for good, the form whose CTAs never
    wait on each other (fused split-K -> the reduction kernel, stream-K -> the persistent walk), and is
    right against float64 on its first call and after."""
    if not _hopper():
        pytest.skip("needs sm_90")
    import numpy as np

    from tilecraft.gemm import sm90
    from tilecraft.gemm.sm90 import Sm90Config
    from tilecraft.gemm.tensorop import EpilogueSpec

    sms = _told_of_more_sms()
    M, N, K = (512, 512, 25600) if path == "fused" else (384, 2560, 2048)
    cfg = Sm90Config(blk_m=128, blk_n=128, stages=4, splits=25) if path == "fused" else \
        Sm90Config(blk_m=128, blk_n=128, stages=4, stream_k=2)
    torch.manual_seed(1)
    A3 = torch.randn(1, M, K, device="cuda").to(torch.bfloat16)
    Bt = torch.randn(1, N, K, device="cuda").to(torch.bfloat16)
    bias = torch.randn(N, device="cuda").to(torch.bfloat16)
    one, zero = np.float32(1), np.float32(0)
    ep = EpilogueSpec(bias="n")
    launch = sm90.Launch(A3, Bt, None, torch.empty(1, M, N, device="cuda", dtype=torch.bfloat16), bias, one, zero,
                         cfg, "bfloat16", ep, sms)
    assert launch.main.cooperative and launch.grid > torch.cuda.get_device_properties(0).multi_processor_count
    assert launch.fused == (path == "fused") and bool(launch.cfg.stream_k) == (path == "streamk")
    ref = (A3[0].double() @ Bt[0].double().t() + bias.double()).float()
    for _ in range(2):
        D = torch.full((1, M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        launch(A3, Bt, None, D, bias, one, zero)
        torch.cuda.synchronize()
        err = float((D[0].float() - ref).norm() / ref.norm())
        assert err < 1e-2, err
        assert not launch.main.cooperative and not launch.fused and not launch.cfg.stream_k
    assert (launch.reduce is not None) == (path == "fused")


@pytest.mark.gpu
def test_gpu_refused_cooperative_register_a_grid_falls_back() -> None:
    """The register-A mixed kernel's splits summed in the kernel, in a grid the GPU cannot hold: the launch
    moves them to the reduction kernel for good, and the result matches float64."""
    if not _hopper():
        pytest.skip("needs sm_90")
    import tilecraft.quant as Q
    from tilecraft.gemm import sm90_mixed_rs
    from tilecraft.gemm.sm90_mixed_rs import RsConfig

    K, N, M = 512, 128 * 100, 100                                      # 2 x 100 tiles x 2 splits = 400 units
    torch.manual_seed(2)
    pw = Q.pack(Q.quantize(torch.randn(K, N, device="cuda") * 0.05, 4, 128), torch.bfloat16)
    x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    b = torch.randn(N, device="cuda").to(torch.bfloat16)
    cfg = RsConfig(blk_m=64, stages=8, depth=4, splits=2)
    launch = sm90_mixed_rs.RsLaunch(x, pw, b, torch.empty(M, N, dtype=torch.bfloat16, device="cuda"), cfg,
                                    _told_of_more_sms())
    assert launch.fused and launch.main.cooperative and launch.reduce is None
    ref = (x.double() @ pw.dequantize(torch.bfloat16).double().cuda() + b.double()).float()
    for _ in range(2):
        y = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
        launch(x, pw, b, y)
        torch.cuda.synchronize()
        err = float((y.float() - ref).norm() / ref.norm())
        assert err < 1e-2, err
        assert not launch.fused and not launch.main.cooperative and launch.reduce is not None
