"""tc.gemm decides each call signature once (op._CALLS) and launches later calls of it without views: the Hopper
kernel's launch takes the operands as the caller holds them and makes its views only where a TMA map is new.

CPU only: the device facts say sm_90 and sm90.Launch is a recorder, so the dispatch and the operands each launch
gets are checked without a GPU (the GPU tests of test_swapped.py and test_plans_gpu.py run the same paths)."""
from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import tilecraft as tc  # noqa: E402
from tilecraft.gemm import op, sm90  # noqa: E402


class _Cuda(torch.Tensor):
    """A CPU tensor that says it is on CUDA (tc.gemm's dispatch reads is_cuda only)."""

    @property
    def is_cuda(self) -> bool:
        return True


class _Launches:
    """Stands in for sm90.Launch: records each construction (its operands and ``view``) and each call."""

    def __init__(self) -> None:
        self.made: list[dict[str, Any]] = []
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, A3: Any, Bt: Any, C3: Any, D3: Any, bias: Any, alpha: Any, beta: Any, cfg: Any, elem: str,
                 ep: Any, sms: int, cooperative: bool = True, view: Any = None) -> Any:
        self.made.append(dict(A3=A3, Bt=Bt, C3=C3, D3=D3, cfg=cfg, ep=ep, view=view))
        calls = self.calls

        def launch(*args: Any) -> None:
            calls.append(args)
        return launch


@pytest.fixture
def hopper(monkeypatch: Any) -> _Launches:
    rec = _Launches()
    monkeypatch.setattr(op, "_device_facts", lambda device: (132, (9, 0)))
    monkeypatch.setattr(sm90, "Launch", rec)
    for name in ("_CALLS", "_RUNS", "_PICKS", "_SKINNY", "_SWAPPED"):
        monkeypatch.setattr(op, name, {})
    return rec


def _bf16(*shape: int, seed: int = 0) -> Any:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(torch.bfloat16).as_subclass(_Cuda)


def test_one_decision_per_signature_and_operands_launched_as_given(hopper: _Launches) -> None:
    """256 x 512 x 1024 (the Hopper kernel, B row-major): the second call of the signature is the first's run; the
    launch gets A, B and D themselves, and the views it makes maps of are the kernel's (A (1,M,K), B^T (1,N,K))."""
    A, B = _bf16(256, 1024), _bf16(1024, 512, seed=1)
    D1 = tc.gemm(A, B)
    A2, B2 = _bf16(256, 1024, seed=2), _bf16(1024, 512, seed=3)
    D2 = tc.gemm(A2, B2, alpha=2.0)                                       # alpha not 1: another epilogue
    D3 = tc.gemm(A2, B2, alpha=3.0)                                       # the same signature as the call before
    assert len(op._CALLS) == 2 and len(hopper.made) == 2 and len(hopper.calls) == 3
    assert hopper.made[0]["ep"].unit_alpha and not hopper.made[1]["ep"].unit_alpha
    for D, (a, b, c, d, bias, alpha, beta), (A_, B_, want) in zip(
            (D1, D2, D3), hopper.calls, ((A, B, 1.0), (A2, B2, 2.0), (A2, B2, 3.0))):
        assert a is A_ and b is B_ and c is None and d is D and bias is None and (alpha, beta) == (want, 0.0)
        assert tuple(D.shape) == (256, 512) and D.dtype == torch.bfloat16
    made = hopper.made[0]
    view = made["view"]
    assert view is op._flat_view
    for i, x, kernel_view in ((0, A, made["A3"]), (1, B, made["Bt"]), (2, D1, made["D3"])):
        v = view(i, x)
        assert (v.shape, v.stride()) == (kernel_view.shape, kernel_view.stride()) and v.data_ptr() == x.data_ptr()
    assert tuple(view(1, B).shape) == (1, 512, 1024)


def test_swapped_calls_launch_the_operands_swapped(hopper: _Launches) -> None:
    """16 x 512 x 1024, B K-contiguous: the swapped problem; the launch takes B as the kernel's A, x as its B, and
    its views are B^T (1, N, K), x (1, M, K) and D^T (1, N, M)."""
    A = _bf16(16, 1024)
    B = _bf16(512, 1024, seed=1).t()                                      # (K, N), K-contiguous
    C = _bf16(16, 512, seed=2)
    D = tc.gemm(A, B, C, beta=0.5, alpha=1.0)
    tc.gemm(A, B, C, beta=0.25)
    assert len(op._SWAPPED) == 1 and len(op._CALLS) == 1 and len(hopper.made) == 1 and len(hopper.calls) == 2
    b, a, c, d, bias, alpha, beta = hopper.calls[0]
    assert b is B and a is A and c is C and d is D and (alpha, beta) == (1.0, 0.5) and hopper.calls[1][6] == 0.25
    made = hopper.made[0]
    view = made["view"]
    for i, x, kernel_view, shape in ((0, B, made["A3"], (1, 512, 1024)), (1, A, made["Bt"], (1, 16, 1024)),
                                     (2, D, made["D3"], (1, 512, 16)), (3, C, made["C3"], (1, 512, 16))):
        v = view(i, x)
        assert tuple(v.shape) == shape and v.stride() == kernel_view.stride() and v.data_ptr() == x.data_ptr()
        if i != 2:                                                        # (D is not written: no kernel ran)
            assert torch.equal(v[0], x.t() if i != 1 else x)


def test_the_key_separates_what_the_plan_depends_on(hopper: _Launches) -> None:
    """Calls that differ in what the decision reads get decisions of their own: C read or not (beta), a bias and
    its mode, the activation, the out dtype, strides, numpy scalars (not keyed: decided at each call)."""
    import numpy as np

    A, B = _bf16(256, 1024), _bf16(1024, 512, seed=1)
    C, bias = _bf16(256, 512, seed=2), _bf16(512, seed=3)
    tc.gemm(A, B)
    tc.gemm(A, B, C, beta=0.0)
    tc.gemm(A, B, C, beta=1.0)
    tc.gemm(A, B, bias=bias)
    tc.gemm(A, B, activation="relu")
    tc.gemm(A, B, out_dtype=torch.float32)
    assert len(op._CALLS) == 6
    calls = len(op._CALLS)
    tc.gemm(A, B, alpha=np.float32(2.0))                                  # not keyed, still run
    assert len(op._CALLS) == calls and len(hopper.calls) == 7
    tc.gemm(_bf16(1024, 256).t(), B)                                      # A column-major: its own decision
    tc.gemm(_bf16(256, 1024, seed=5), _bf16(1024, 512, seed=6))           # other tensors of a known signature
    assert len(op._CALLS) == calls + 1 and len(hopper.calls) == 9
    tc.gemm.clear_plans()
    assert not op._CALLS and not op._RUNS


def test_bad_options_raise_before_any_key() -> None:
    A = _bf16(4, 64)
    with pytest.raises(TypeError, match="config must be"):
        tc.gemm(A, A.t(), config={"blk_m": 64})
