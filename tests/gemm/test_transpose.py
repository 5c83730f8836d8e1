"""The transpose kernel (tilecraft.kernels.transpose): compiled for sm_80 and sm_90a, 128-bit global
accesses on both sides in the full trace, conflict-free smem by construction (odd pitch), exact
results on the CPU (emulated) and on a GPU for odd shapes and views."""
from __future__ import annotations

import random

import pytest
import torch

import emulate
import sass
from tilecraft.kernels.transpose import CONFIGS, DEFAULT, TransposeConfig, transpose, transpose_args, transpose_kernel

NAMES = list(CONFIGS)


def _args(cfg: TransposeConfig, R: int, C: int):
    A, B = torch.zeros(R, C), torch.zeros(C, R)
    return transpose_args(A, B, cfg)[0]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_compiles_and_vectorizes(name, arch):
    cfg = CONFIGS[name]
    args = _args(cfg, 4 * cfg.tile, 2 * cfg.tile)
    assert args[-1] is True
    k = transpose_kernel.compile(*args, arch=arch)
    assert not k.resources.spills and k.resources.stack_frame_bytes == 0
    assert k.resources.smem_bytes == (cfg.tile * (cfg.tile + 1) - 1) * 4  # odd pitch, last row's pad unused
    src = transpose_kernel.source(*args)
    per_thread = cfg.tile * cfg.tile // cfg.threads // 4
    assert src.count("*reinterpret_cast<uint4*>(rA") == per_thread  # LDG.128 from A's rows
    assert src.count("*reinterpret_cast<uint4*>(tBgB") == per_thread  # STG.128 into B's rows
    assert src.count("__syncthreads();") == 1 and "?" not in src
    if sass.cuobjdump() is not None:
        text = sass.sass(k.module.cubin)
        assert sass.count(text, "LDG.E.128.CONSTANT") == per_thread and sass.count(text, "STG.E.128") == per_thread
        assert sass.count(text, "LDG.E.CONSTANT") == 0 and sass.count(text, "STG.E") == 0


def test_smem_accesses_of_a_warp_hit_32_banks():
    # the layouts the kernel uses, evaluated for the 32 lanes of warp 0 (pitch tile + 1)
    import tilecraft as tc
    from tilecraft.dsl.partition import vector_permutation

    for cfg in CONFIGS.values():
        thr = cfg.thread_layout()
        s = tc.make_layout((cfg.tile, cfg.tile), (1, cfg.tile + 1))
        runs = tc.size(thr, 0)
        perm = vector_permutation(runs, cfg.tile)
        for contiguous in (1, 0):  # the read side (runs along c) and the write side (runs along r)
            view = tc.select(s, contiguous, 1 - contiguous)
            for v in range(4):
                banks = set()
                for lane in range(32):
                    run, line = _coord(thr, lane)
                    banks.add(view(perm((run, v, 0)), line) % 32)
                assert len(banks) == 32, (cfg, contiguous, v)


def _coord(thr, t):
    """The (run, line) coordinate of thread t in the (hierarchical) thread layout."""
    import tilecraft as tc

    for run in range(tc.size(thr, 0)):
        for line in range(tc.size(thr, 1)):
            if thr(run, line) == t:
                return run, line
    raise AssertionError(t)


def test_transpose_checks_its_inputs():
    with pytest.raises(ValueError, match="CUDA"):
        transpose(torch.zeros(4, 4))
    with pytest.raises(TypeError, match="float32"):
        transpose(torch.zeros(4, 4, dtype=torch.float64))
    with pytest.raises(TypeError, match="torch tensor"):
        transpose([[1.0]])


@pytest.mark.skipif(not emulate.available(), reason="no host C++ compiler")
@pytest.mark.parametrize("name", NAMES)
def test_emulated(name):
    cfg = CONFIGS[name]
    torch.manual_seed(0)
    for R, C, strided in ((2 * cfg.tile, 3 * cfg.tile, False), (67, 45, False), (1, 77, False), (33, 129, True)):
        A = torch.randn(C, R).t() if strided else torch.randn(R, C)
        B = torch.full((C, R), float("nan"))
        args, grid, block = transpose_args(A, B, cfg)
        assert args[-1] == (R % cfg.tile == 0 and C % cfg.tile == 0 and not strided)
        emulate.launch(transpose_kernel, grid, block, *args)
        assert torch.equal(B, A.t())


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_gpu_odd_shapes_and_views(name):
    cfg = CONFIGS[name]
    rng = random.Random(name)
    shapes = [(1, 1), (1, 1000), (1000, 1), (cfg.tile, cfg.tile), (4096, 2 * cfg.tile)]
    shapes += [(rng.randint(1, 1000), rng.randint(1, 1000)) for _ in range(6)]
    for i, (R, C) in enumerate(shapes):
        A = torch.randn(C, R, device="cuda").t() if i % 3 == 2 else torch.randn(R, C, device="cuda")
        assert torch.equal(transpose(A, config=cfg), A.t())
    out = torch.empty(300, 200, device="cuda")
    A = torch.randn(200, 300, device="cuda")
    assert transpose(A, out) is out and torch.equal(out, A.t())
