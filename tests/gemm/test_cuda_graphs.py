"""tc.gemm captured in a CUDA graph (torch.cuda.graph), as LLM serving runs its decoding steps.

Each path is warmed up eagerly (compiles, plans), captured once, then replayed twice on new inputs copied into
the captured ones, against float64: the dense Hopper kernel (whole tiles, split-K summed in the kernel, stream-K:
cooperative launches), the sm80 kernel, the skinny GEMM and the swapped problem of few 16-bit rows, fp8, and the
mixed-input kernels (the small-M kernels' programmatic dependent launches, the register-A kernel with and without
its in-kernel split-K sum). A second replay checks that the flags the captured launches leave behind are back at 0.
"""
from __future__ import annotations

from typing import Any, Callable

import pytest

torch = pytest.importorskip("torch")

import tilecraft as tc  # noqa: E402
import tilecraft.quant as Q  # noqa: E402
from tilecraft.gemm import Sm90Config, TensorOpConfig  # noqa: E402


def _hopper() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


def _rel(y: Any, ref: Any) -> float:
    return float((y.double() - ref).norm() / ref.norm())


def _replays(fn: Callable[[], Any], inputs: list[Any], ref: Callable[[], Any], tol: float) -> None:
    """Warm fn up, capture it, then twice: new random inputs in place, replay, compare with ref()."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):                                         # torch's advice: warm up off the default
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    for seed in (1, 2):
        torch.manual_seed(seed)
        for t in inputs:
            t.copy_(torch.randn(t.shape, device="cuda").to(t.dtype))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        err = _rel(out, ref())
        assert err < tol, (seed, err)


DENSE = [
    ("whole tiles", 512, 1024, 2048, None),
    ("split-K in the kernel", 128, 1024, 8192, None),                      # the pick: 64x128 in 8 slices, fused
    ("stream-K", 256, 2560, 4096, Sm90Config(stages=3, cluster_m=2, stream_k=2)),
    ("sm80", 256, 512, 1024, TensorOpConfig()),
]


@pytest.mark.gpu
@pytest.mark.parametrize("case", DENSE, ids=[c[0] for c in DENSE])
def test_gpu_dense_gemm_in_a_cuda_graph(case: tuple) -> None:
    if not _hopper():
        pytest.skip("needs sm_90")
    _name, M, N, K, config = case
    A = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    B = torch.randn(K, N, device="cuda").to(torch.bfloat16)
    _replays(lambda: tc.gemm(A, B, config=config), [A, B], lambda: A.double() @ B.double(), 1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("n_major", [False, True], ids=["B K-contiguous", "B N-contiguous"])
def test_gpu_skinny_gemm_in_a_cuda_graph(n_major: bool) -> None:
    """8 rows, N = 1024: a K-contiguous B runs tc.gemm's skinny GEMM (a programmatic dependent launch, 32 row blocks in
    split-K), an N-contiguous one the swapped problem (op.SWAP_ROWS)."""
    if not _hopper():
        pytest.skip("needs sm_90")
    A = torch.randn(8, 4096, device="cuda").to(torch.bfloat16)
    B = torch.randn(4096, 1024, device="cuda").to(torch.bfloat16)
    B = B if n_major else B.t().contiguous().t()
    _replays(lambda: tc.gemm(A, B), [A, B], lambda: A.double() @ B.double(), 1e-2)


@pytest.mark.gpu
def test_gpu_swapped_problem_in_a_cuda_graph() -> None:
    """24 rows of a long K (tc.gemm's swapped problem, two splits summed in the kernel: a cooperative launch)."""
    if not _hopper():
        pytest.skip("needs sm_90")
    A = torch.randn(24, 16384, device="cuda").to(torch.bfloat16)
    B = torch.randn(1024, 16384, device="cuda").to(torch.bfloat16).t()
    _replays(lambda: tc.gemm(A, B), [A, B], lambda: A.double() @ B.double(), 1e-2)


@pytest.mark.gpu
def test_gpu_fp8_gemm_in_a_cuda_graph() -> None:
    if not _hopper():
        pytest.skip("needs sm_90")
    A8 = torch.empty(256, 1024, device="cuda", dtype=torch.float8_e4m3fn)
    B8 = torch.empty(2048, 1024, device="cuda", dtype=torch.float8_e4m3fn).t()          # K-major B
    for t in (A8, B8):
        t.copy_(torch.randn(t.shape, device="cuda"))
    _replays(lambda: tc.gemm(A8, B8, scale_a=0.5, scale_b=2.0), [A8, B8],
             lambda: A8.double() @ B8.double(), 1e-2)


MIXED = [(1, 4, 128), (8, 4, 128), (16, 8, None), (64, 4, 128), (128, 8, None), (300, 4, 64)]


@pytest.mark.gpu
@pytest.mark.parametrize("M,bits,group", MIXED, ids=[f"M{m}-w{b}-g{g}" for m, b, g in MIXED])
def test_gpu_mixed_gemm_in_a_cuda_graph(M: int, bits: int, group: int | None) -> None:
    if not _hopper():
        pytest.skip("needs sm_90")
    K, N = 4096, 4096
    torch.manual_seed(0)
    pw = Q.pack(Q.quantize(torch.randn(K, N, device="cuda") * 0.02, bits, group), torch.bfloat16)
    w = pw.dequantize(torch.bfloat16).double()
    x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    bias = torch.randn(N, device="cuda").to(torch.bfloat16)
    _replays(lambda: tc.gemm(x, pw, bias=bias), [x, bias], lambda: x.double() @ w + bias.double(), 1e-2)


def test_the_graph_cases_take_the_paths_they_name() -> None:
    """On a 132-SM H100 the cases above run what the module docstring says (host picks, no GPU needed)."""
    import math

    from tilecraft.gemm.op import pick_sm90_config
    from tilecraft.gemm.sm90 import fused_split_reduction
    from tilecraft.gemm.sm90_mixed import SM90_MIN_M, pick_config
    from tilecraft.gemm.sm90_mixed_rs import RsConfig, rs_launch_args

    for name, M, N, K, config in DENSE[:2]:
        c = pick_sm90_config(M, N, K, 1, 132)
        units = math.ceil(M / c.blk_m) * math.ceil(N / c.blk_n) * c.splits
        assert fused_split_reduction(c, units, 132) == (name == "split-K in the kernel"), (name, c.name)
    fused = {}
    for M, bits, group in MIXED:
        pw = Q.pack(Q.quantize(torch.randn(4096, 4096) * 0.02, bits, group), torch.bfloat16)
        if M < SM90_MIN_M:
            continue                                                      # the small-M kernels
        cfg = pick_config(pw.format, M, 4096, 4096, 132)
        assert isinstance(cfg, RsConfig)
        x, y = torch.empty(M, 4096, dtype=torch.bfloat16), torch.empty(M, 4096, dtype=torch.bfloat16)
        args, _units = rs_launch_args(x, pw, torch.empty(4096, dtype=torch.bfloat16), y, cfg, sms=132)
        fused[M] = args[12] is not None
    assert min(m for m, _b, _g in MIXED) < SM90_MIN_M
    assert fused == {64: True, 128: True, 300: False}
