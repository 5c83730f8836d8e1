"""The sm80 tensor-op kernel's heuristic table on the GPU, forced.

On sm_90 tc.gemm's automatic choice is the Hopper kernel, so the fuzz of test_tensorop.py mostly runs
that one there; these tests pin every sm80 table entry (and what ``pick_config`` picks per shape) with
``config=`` so the portable kernel is checked against float64 on Hopper too."""
from __future__ import annotations

import random
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import tilecraft as tc  # noqa: E402
from tilecraft.gemm import HEURISTIC_TABLE, pick_config  # noqa: E402

_TOL = {torch.float16: 2e-3, torch.bfloat16: 1.5e-2, torch.float32: 1e-4, "tf32": 5e-3}
_ACT = {"none": lambda v: v, "relu": torch.relu, "gelu": torch.nn.functional.gelu,
        "silu": torch.nn.functional.silu}


def _operand(R: int, C: int, last: bool, dt: Any, g: Any) -> Any:
    """Random (R, C) on the GPU, contiguous along C (last) or along R (a transposed view)."""
    x = torch.randn(*((R, C) if last else (C, R)), device="cuda", generator=g).to(dt)
    return x if last else x.t()


def _check(cfg: Any, M: int, N: int, K: int, dt: Any, majors: str, act: str, bias: str, seed: int,
           tf32: bool = False) -> None:
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = _operand(M, K, majors[0] == "k", dt, g)
    B = _operand(K, N, majors[1] != "k", dt, g)
    C = torch.randn(M, N, device="cuda", generator=g).to(dt)
    b = torch.randn(N if bias == "n" else M, device="cuda", generator=g).to(dt) if bias != "none" else None
    D = tc.gemm(A, B, C, alpha=1.5, beta=0.5, bias=b, activation=act, bias_along=bias if b is not None else "n",
                config=cfg, allow_tf32=tf32 or None)
    ref = 1.5 * (A.double() @ B.double()) + 0.5 * C.double()
    if b is not None:
        ref = ref + (b.double() if bias == "n" else b.double()[:, None])
    ref = _ACT[act](ref)
    assert torch.isfinite(D).all(), (cfg.name, M, N, K)
    err = float((D.double() - ref).norm() / ref.norm().clamp_min(1e-30))
    assert err < _TOL["tf32" if tf32 else dt], (cfg.name, M, N, K, dt, majors, act, bias, err)


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(HEURISTIC_TABLE))
def test_table_entry_forced(name: str) -> None:
    """Each table entry on odd shapes (predicated edges) and on whole tiles (the unpredicated kernel,
    where the staged epilogue runs), fp16 and bf16, four majors, random epilogues."""
    cfg = HEURISTIC_TABLE[name]
    rng = random.Random(name)
    shapes = [(rng.randint(1, 2000), rng.randint(1, 2000), rng.randint(1, 2000)) for _ in range(3)]
    shapes.append((2 * cfg.blk_m, 3 * cfg.blk_n, 8 * cfg.blk_k))
    for i, (M, N, K) in enumerate(shapes):
        _check(cfg, M, N, K, rng.choice([torch.float16, torch.bfloat16]), rng.choice(["kk", "km", "mk", "mm"]),
               rng.choice(list(_ACT)), rng.choice(["none", "n", "m"]), seed=i)


@pytest.mark.gpu
def test_pick_config_choices() -> None:
    """What the sm80 heuristic picks (big, mid, small tiles, split-K) for shapes across its range, fp16 and
    tf32, forced on this GPU."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    shapes = [(4096, 2048, 512), (1024, 1024, 1024), (300, 200, 3000), (512, 512, 16384), (77, 1500, 999)]
    for i, (M, N, K) in enumerate(shapes):
        _check(pick_config(M, N, K, 1, "float16", sms), M, N, K, torch.float16, "km", "none", "n", seed=10 + i)
        _check(pick_config(M, N, K, 1, "tf32", sms), M, N, K, torch.float32, "km", "relu", "none", seed=20 + i,
               tf32=True)
