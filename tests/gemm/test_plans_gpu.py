"""Calls of one signature share their prepared launch (op._RUNS, mixed._RUNS): on the GPU, a second call
with other operands (other addresses, hence other TMA maps), other alpha / beta / C / bias values and
another weight of the same format must compute with its own inputs, against float64."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tilecraft as tc  # noqa: E402
import tilecraft.quant as Q  # noqa: E402
from mixed_gemm_check import check_mixed_gemm  # noqa: E402
from tilecraft.gemm import GemmOp, Sm90Config, TensorOpConfig, mixed, op  # noqa: E402

pytestmark = pytest.mark.gpu


def _hopper() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


def _err(D: Any, ref: Any) -> float:
    return float((D.double() - ref).norm() / ref.norm())


def _operands(M: int, N: int, K: int, dt: Any, seed: int) -> tuple[Any, ...]:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(M, K, device="cuda", generator=g).to(dt), torch.randn(K, N, device="cuda", generator=g).to(dt),
            torch.randn(M, N, device="cuda", generator=g).to(dt), torch.randn(N, device="cuda", generator=g).to(dt))


@pytest.mark.parametrize("config", [None, Sm90Config(128, 128, 64, stages=4, splits=3),
                                    TensorOpConfig(128, 128, 32, 2, 2, stages=3, splits=3, split_mode="serial"),
                                    TensorOpConfig(128, 128, 32, 2, 2, stages=3, splits=3, split_mode="parallel")],
                         ids=["pick", "sm90-splitk", "sm80-serial", "sm80-parallel"])
def test_tc_gemm_calls_of_one_signature(config: Any) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    if isinstance(config, Sm90Config) and not _hopper():
        pytest.skip("needs sm_90")
    M, N, K = 300, 576, 1000                  # ragged M and N tiles; B (K, N) row-major: N whole 64-columns
    runs = None
    for seed, (alpha, beta) in enumerate(((0.5, 1.0), (-2.0, 0.25), (3.0, -1.0))):
        A, B, C, bias = _operands(M, N, K, torch.bfloat16, seed)
        D = tc.gemm(A, B, C, alpha=alpha, beta=beta, bias=bias, activation="silu", config=config)
        ref = torch.nn.functional.silu(alpha * (A.double() @ B.double()) + beta * C.double() + bias.double())
        assert _err(D, ref) < 1.5e-2, (seed, _err(D, ref))
        runs = len(op._RUNS) if runs is None else runs
        assert len(op._RUNS) == runs                                     # the first call's plan, reused


def test_gemm_op_out_and_batch_of_one_signature() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    cfg = Sm90Config(128, 128, 64, stages=4) if _hopper() else TensorOpConfig(128, 128, 32, 2, 2, stages=3)
    g = torch.Generator(device="cuda").manual_seed(3)
    gemm = GemmOp("float16", None, cfg)
    for _ in range(3):
        A = torch.randn(3, 200, 384, device="cuda", generator=g).half()
        B = torch.randn(384, 192, device="cuda", generator=g).half()      # broadcast over the batch
        out = torch.empty(3, 200, 192, device="cuda", dtype=torch.float16)
        assert gemm(A, B, out=out) is out
        assert _err(out, A.double() @ B.double()) < 2e-3


@pytest.mark.parametrize("M", [1, 5, 40, 300])
def test_mixed_calls_of_one_format_with_other_weights(M: int) -> None:
    """Two weights of one format (other addresses), other activations and biases: each call its own."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    g = torch.Generator().manual_seed(M)
    K, N = 1024, 768
    weights = [Q.pack(Q.quantize(torch.randn(K, N, generator=g) * 0.05, 4, 128), torch.bfloat16).to("cuda")
               for _ in range(2)]
    runs = None
    for i in range(3):
        x = torch.randn(M, K, generator=g).to(torch.bfloat16).cuda()
        bias = torch.randn(N, generator=g).to(torch.bfloat16).cuda()
        pw = weights[i % 2]
        y = tc.gemm(x, pw, bias=bias)
        check_mixed_gemm(y, x, pw, bias, {torch.bfloat16: 1.5e-2}, torch.float64)
        runs = len(mixed._RUNS) if runs is None else runs
        assert len(mixed._RUNS) == runs
