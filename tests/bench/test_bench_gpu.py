"""On a GPU: real timings, the correctness gate, and a short sweep. Skipped cleanly without CUDA."""
import pytest



def _cuda() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


HAS_CUDA = _cuda()

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")]


def test_time_a_real_matmul():
    import torch

    from tilecraft.bench import bench

    a = [torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
    b = [torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
    r = bench(torch.matmul, list(zip(a, b)), rep_ms=50)
    assert r.method == "cuda-events" and r.n >= 10 and r.n_arg_sets == 4
    assert 0 < r.min_ms <= r.median_ms <= r.max_ms
    tflops = 2 * 2048**3 / (r.median_ms * 1e-3) / 1e12
    assert 20 < tflops < 2000


def test_tiny_kernel_is_not_launch_bound():
    import torch

    from tilecraft.bench import bench

    x = torch.randn(1024, device="cuda")
    r = bench(torch.neg, [(x,)], rep_ms=20)
    gaps = bench(torch.neg, [(x,)], rep_ms=20, gpu_sleep=False)
    print(f"tiny kernel: {r.median_ms * 1e3:.1f} us queued behind a spin, {gaps.median_ms * 1e3:.1f} us launched live")
    # A 4 KB elementwise kernel takes a few microseconds; the host's launch gap is what the spin hides.
    assert r.gpu_sleep
    assert r.median_ms < 0.02, r
    assert r.median_ms <= gaps.median_ms * 1.2


def test_flush_l2_mode():
    import torch

    from tilecraft.bench import bench

    x = torch.randn(1 << 20, device="cuda")
    r = bench(torch.neg, [(x,)], rep_ms=10, flush_l2=True)
    assert r.flush_l2 and r.n >= 10


def test_correctness_gate_catches_wrong_contender():
    import torch

    from tilecraft.bench import Kernel, register_contender, unregister_contender
    from tilecraft.bench.gemm import run_gemm_sweep
    from tilecraft.bench.shapes import GemmShape

    def off_by_one_k(a, b):
        return torch.matmul(a[:, 1:], b[1:, :])  # drops one K slice: a classic tail bug

    register_contender("gpu_wrong", lambda p: Kernel(fn=off_by_one_k, prepare=lambda x: (x.a, x.b), label="bad"))
    try:
        sweep = run_gemm_sweep([GemmShape(256, 256, 64)], "fp16", ["gpu_wrong"], progress=False)
    finally:
        unregister_contender("gpu_wrong")
    recs = {r.contender: r for r in sweep.records}
    assert recs["cublas"].status == "ok"
    assert recs["gpu_wrong"].status == "wrong" and recs["gpu_wrong"].median_ms is None


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32", "fp8", "w4a16"])
def test_short_sweep(dtype):
    from tilecraft.bench.gemm import run_gemm_sweep
    from tilecraft.bench.shapes import GemmShape
    from tilecraft.bench.timing import Timer

    against = ["cublas", "triton", "scaled_mm", "int4_mm"]
    sweep = run_gemm_sweep([GemmShape(16, 4096, 4096), GemmShape(1024, 1024, 1024)], dtype, against,
                           timer=Timer(warmup_ms=5, rep_ms=10), progress=False)
    recs = {(r.shape, r.contender): r for r in sweep.records}
    assert recs[("1024x1024x1024", "cublas")].status == "ok", recs[("1024x1024x1024", "cublas")].detail
    for r in sweep.records:
        assert r.status in ("ok", "missing"), (r.contender, r.status, r.detail)
