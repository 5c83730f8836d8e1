"""gemm_device (the seed's tutorial SGEMM): compiled to cubins on the CPU for every operand major and two
tilings, with the expected structure and no spills; on a GPU, checked against float64 on odd shapes."""
from __future__ import annotations

import random
import re

import pytest
import torch
from fp32_gemm_check import check_fp32_gemm

from tilecraft.gemm.simt import SimtTiling, gemm_device, gemm_device_args, sgemm

TILINGS = [SimtTiling(), SimtTiling(64, 64, 8, (32, 8), (32, 8), (16, 16))]
MAJORS = [("m", "n"), ("m", "k"), ("k", "n"), ("k", "k")]  # A (M,K) and B (K,N): which mode is contiguous


def operands(M: int, N: int, K: int, a_major: str, b_major: str, device: str = "cpu", fill=torch.zeros):
    """A (M,K), B (K,N), C (M,N) float32 tensors with the given contiguous modes."""
    A = fill(K, M, device=device).t() if a_major == "m" else fill(M, K, device=device)
    B = fill(K, N, device=device) if b_major == "n" else fill(N, K, device=device).t()
    C = fill(N, M, device=device).t()
    return A, B, C


@pytest.fixture(scope="module")
def compiled():
    out = {}
    for tiling in TILINGS:
        for a_major, b_major in MAJORS:
            A, B, C = operands(1000, 999, 77, a_major, b_major)
            args, grid, block = gemm_device_args(A, B, C, 1.0, 0.5, tiling)
            for arch in ("sm_80", "sm_90a"):
                out[tiling, a_major, b_major, arch] = (gemm_device.source(*args), gemm_device.compile(*args, arch=arch))
    return out


@pytest.mark.parametrize("tiling", TILINGS, ids=["128x128x8", "64x64x8"])
@pytest.mark.parametrize("a_major,b_major", MAJORS, ids=["".join(m) for m in MAJORS])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_gemm_device_compiles_without_spills(compiled, tiling, a_major, b_major, arch):
    src, kernel = compiled[tiling, a_major, b_major, arch]
    res = kernel.resources
    assert res is not None and not res.spills and res.stack_frame_bytes == 0
    assert res.registers <= 255
    assert res.smem_bytes == (tiling.blk_m + tiling.blk_n) * tiling.blk_k * 4
    assert kernel.module.arch == arch


@pytest.mark.parametrize("tiling", TILINGS, ids=["128x128x8", "64x64x8"])
@pytest.mark.parametrize("a_major,b_major", MAJORS, ids=["".join(m) for m in MAJORS])
def test_gemm_device_source_structure(compiled, tiling, a_major, b_major):
    src, _ = compiled[tiling, a_major, b_major, "sm_80"]
    bM, bN, bK = tiling.blk_m, tiling.blk_n, tiling.blk_k
    assert f"__launch_bounds__({tiling.threads}) gemm_device(" in src
    # parameters: M, N, K, the pointers (read-only A and B), the runtime strides, alpha and beta;
    # the unit stride of each operand is static, so it is not a parameter
    assert re.search(r"int M,\s+int N,\s+int K,\s+const float\* __restrict__ A,", src)
    assert ("int dA_1" in src and "dA_0" not in src) if a_major == "m" else ("int dA_0" in src and "dA_1" not in src)
    assert ("int dB_1" in src) if b_major == "n" else ("int dB_0" in src)
    assert "float* __restrict__ C," in src and "float alpha,\n    float beta)" in src
    # the seed's structure, with its shape comments
    assert f"__shared__ __align__(128) float sA[{bM * bK}];" in src
    for comment in ("(BLK_M,BLK_K,k)", "(BLK_N,BLK_K,k)", "(BLK_M,BLK_N)", "(THR_M,THR_K,k)", "(THR_M,THR_K)",
                    "(THR_N,THR_K,k)", "(THR_M,BLK_K)", "(THR_N,BLK_K)", "(THR_M,THR_N)"):
        assert f"// {comment}" in src
    thr_m, thr_n = bM // tiling.thr_c[0], bN // tiling.thr_c[1]
    assert f"float tCrC[{thr_m * thr_n}];  // (THR_M,THR_N)" in src
    assert "const int k_tile_max = (K + 7) / 8;" in src
    assert src.count("for (int k_tile = 0; k_tile < k_tile_max; ++k_tile) {") == 1
    assert src.count("__syncthreads();") == 2
    # copies: each thread moves its elements of A and B, zero outside the matrix
    n_a = bM * bK // tiling.threads
    assert len(re.findall(r"tAsA\[\d+\] = tAcA_0.* \? tAgA\[.*\] : 0\.0f;", src)) == n_a
    # gemm: one FMA per (m, n, k), operands loaded from smem once per k
    assert len(re.findall(r"tCrC\[\d+\] \+= a\d+ \* b\d+;", src)) == thr_m * thr_n * bK
    assert len(re.findall(r"const float a\d+ = tCsA\[\d+\];", src)) == thr_m * bK
    # epilogue: predicated stores, C read only when beta != 0
    assert "if (beta == 0.0f) {" in src
    assert len(re.findall(r"if \(tCcC_0.* < M && tCcC_1.* < N\) tCgC\[.*\] = alpha \* tCrC\[\d+\];", src)) == thr_m * thr_n


def test_sgemm_checks_its_inputs():
    A, B, C = operands(4, 5, 6, "m", "n")
    with pytest.raises(ValueError, match="CUDA device"):
        sgemm(A, B)
    with pytest.raises(TypeError, match="float32"):
        sgemm(A.double(), B)
    with pytest.raises(TypeError, match="torch tensor"):
        sgemm([[1.0]], B)


# ----------------------------------------------------------------------------- GPU

@pytest.mark.gpu
@pytest.mark.parametrize("a_major,b_major", MAJORS, ids=["".join(m) for m in MAJORS])
def test_sgemm_matches_float64_on_odd_shapes(a_major, b_major):
    rng = random.Random(a_major + b_major)  # reproducible shapes per major pair
    shapes = [(1, 1, 1), (1000, 1, 3), (1, 999, 1000), (129, 127, 9)]
    shapes += [(rng.randint(1, 1000), rng.randint(1, 1000), rng.randint(1, 1000)) for _ in range(6)]
    torch.manual_seed(0)
    for M, N, K in shapes:
        A, B, C = operands(M, N, K, a_major, b_major, "cuda", torch.randn)
        C0 = C.clone()
        alpha, beta = 1.5, -0.5
        out = sgemm(A, B, C, alpha, beta)
        assert out is C
        check_fp32_gemm(A, B, C0, C, alpha, beta)


@pytest.mark.gpu
@pytest.mark.parametrize("tiling", TILINGS, ids=["128x128x8", "64x64x8"])
def test_sgemm_beta_zero_ignores_nan_and_views(tiling):
    M, N, K = 300, 257, 131
    A = torch.randn(M + 1, K + 3, device="cuda")[1:, 3:]  # an unaligned view
    B = torch.randn(K, N, device="cuda")
    C = torch.full((M, N), float("nan"), device="cuda")
    sgemm(A, B, C, 1.0, 0.0, tiling=tiling)
    check_fp32_gemm(A, B, torch.zeros_like(C), C, 1.0, 0.0)
    D = sgemm(A, B)
    check_fp32_gemm(A, B, torch.zeros_like(D), D, 1.0, 0.0)


@pytest.mark.gpu
def test_gemm_device_example_runs():
    import subprocess
    import sys
    from pathlib import Path

    import os

    import tilecraft

    example = Path(__file__).resolve().parents[2] / "examples" / "gemm_device.py"
    # the example imports the tilecraft these tests run (a checkout on sys.path, not necessarily installed)
    paths = [str(Path(tilecraft.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    for trans in ("N", "T"):
        r = subprocess.run([sys.executable, str(example), "-m", "1000", "-n", "999", "-k", "77", "--trans-a", trans],
                           capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr + r.stdout
        assert "max |error|" in r.stdout
