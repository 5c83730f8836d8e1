"""The GEMM sweep end to end on the CPU, with CPU contenders and fake timings."""
import pytest

torch = pytest.importorskip("torch")

from tilecraft.bench.contenders import Kernel, Missing, register_contender, unregister_contender  # noqa: E402
from tilecraft.bench.gemm import GemmSweep, run_gemm_sweep  # noqa: E402
from tilecraft.bench.problem import GemmProblem, dequantize_w4, make_inputs, reference, rel_error  # noqa: E402
from tilecraft.bench.roofline import Ceilings  # noqa: E402
from tilecraft.bench.shapes import GemmShape  # noqa: E402
from tilecraft.bench.timing import TimingResult  # noqa: E402

FAKE_MS = {"base": 2.0, "fast": 1.0, "slow": 4.0}


class FakeTimer:
    """Returns fixed times per contender; records how many arg sets each got."""

    def __init__(self):
        self.calls = []

    def __call__(self, fn, arg_sets):
        self.calls.append((fn.__name__, len(arg_sets)))
        fn(*arg_sets[-1])  # the rotation's copies are real, usable arguments
        t = FAKE_MS[fn.__name__]
        return TimingResult.from_samples([t * 0.9, t, t, t, t * 1.1], method="fake", n_arg_sets=len(arg_sets))


def _mm(a, b):
    return (a.float() @ b.float()).to(a.dtype)


def base(a, b):
    return _mm(a, b)


def fast(a, b):
    return _mm(a, b)


def slow(a, b):
    return _mm(a, b)


def wrong(a, b):
    return _mm(a, b) * 1.01


def raises(a, b):
    raise RuntimeError("launch failed")


@pytest.fixture
def cpu_contenders():
    ab = lambda x: (x.a, x.b)  # noqa: E731
    names = {"base": base, "fast": fast, "slow": slow, "wrong": wrong, "raises": raises}
    for n, f in names.items():
        register_contender(f"cpu_{n}", lambda p, f=f: Kernel(fn=f, prepare=ab, label=f"cpu {f.__name__}"))
    register_contender("cpu_missing", lambda p: Missing("not on this machine"))
    yield
    for n in list(names) + ["missing"]:
        unregister_contender(f"cpu_{n}")


def test_sweep_statuses_ratios_and_floor(cpu_contenders, tmp_path):
    shapes = [GemmShape(64, 96, 128), GemmShape(1, 256, 512, "toy.qkv")]
    ceil = Ceilings("fake", copy_bytes_per_s=1e9, flops_per_s={"bf16": 1e10})
    timer = FakeTimer()
    sweep = run_gemm_sweep(
        shapes, "bf16", ["cpu_fast", "cpu_slow", "cpu_wrong", "cpu_raises", "cpu_missing"],
        baseline="cpu_base", device="cpu", timer=timer, ceilings=ceil, progress=False,
        l2_bytes=1 << 20, meta={"command": "test"},
    )
    recs = {(r.shape, r.contender): r for r in sweep.records}
    assert len(sweep.records) == 2 * 6
    assert [r.contender for r in sweep.records[:6]][0] == "cpu_base"  # baseline first
    r = recs[("64x96x128", "cpu_fast")]
    assert r.status == "ok" and r.ratio == pytest.approx(2.0) and r.median_ms == 1.0
    assert r.tflops == pytest.approx(2 * 64 * 96 * 128 / 1e-3 / 1e12)
    assert r.rel_err is not None and r.rel_err < r.tol
    p = GemmProblem(64, 96, 128, "bf16", "cpu")
    floor_s = max(p.flops / 1e10, p.bytes / 1e9)
    assert r.floor_ms == pytest.approx(floor_s * 1e3)
    assert r.pct_floor == pytest.approx(100 * floor_s * 1e3 / 1.0)
    assert recs[("64x96x128", "cpu_slow")].ratio == pytest.approx(0.5)
    assert recs[("64x96x128", "cpu_base")].ratio == pytest.approx(1.0)
    w = recs[("64x96x128", "cpu_wrong")]
    assert w.status == "wrong" and w.median_ms is None and "tolerance" in w.detail
    assert recs[("64x96x128", "cpu_raises")].status == "error"
    assert "launch failed" in recs[("64x96x128", "cpu_raises")].detail
    m = recs[("toy.qkv M=1", "cpu_missing")]
    assert m.status == "missing" and m.detail == "not on this machine"
    # wrong / error / missing contenders are never timed
    assert {c[0] for c in timer.calls} == {"base", "fast", "slow"}
    # rotation: A+B of 64x128 + 128x96 bf16 = 40 KiB against 1 MiB "L2" x3 -> 77 copies
    assert recs[("64x96x128", "cpu_fast")].copies == 77
    assert ("fast", 77) in timer.calls
    assert sweep.failures() and sweep.meta["command"] == "test" and sweep.meta["dtype"] == "bf16"

    path = sweep.save_json(tmp_path / "s.json")
    back = GemmSweep.load_json(path)
    assert back.to_dict() == sweep.to_dict()


def test_sweep_baseline_missing_leaves_ratio_empty(cpu_contenders):
    sweep = run_gemm_sweep([GemmShape(16, 16, 16)], "fp32", ["cpu_fast"], baseline="cpu_missing",
                           device="cpu", timer=FakeTimer(), progress=False)
    fast = [r for r in sweep.records if r.contender == "cpu_fast"][0]
    assert fast.ok and fast.ratio is None and fast.pct_floor is None


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32", "fp8"])
def test_inputs_are_random_and_reference_is_exact(dtype):
    p = GemmProblem(32, 48, 64, dtype, "cpu")
    g = torch.Generator().manual_seed(0)
    x = make_inputs(p, g)
    assert x.a.shape == (32, 64) and x.b.shape == (64, 48)
    assert x.b.stride() == (1, 64)  # column-major B (K-major), the Linear-weight layout
    assert x.a.dtype == getattr(torch, p.spec.torch_in)
    assert float(x.a.float().abs().mean()) > 0.3  # never zeros
    assert x.a.float().std() > 0.5
    ref = reference(x)
    assert ref.dtype == torch.float64
    exact = x.a.double() if dtype != "fp8" else x.a.float().double()
    assert torch.allclose(ref, exact @ x.b.float().double())
    assert rel_error(ref.float(), ref) < 1e-6
    assert rel_error(torch.full_like(ref, float("nan")), ref) == float("inf")


def test_w4a16_reference_matches_torch_cpu_int4_kernel():
    p = GemmProblem(4, 64, 256, "w4a16", "cpu")
    x = make_inputs(p, torch.Generator().manual_seed(0))
    assert x.q.dtype == torch.uint8 and int(x.q.max()) <= 15
    ref = reference(x)
    w = dequantize_w4(x)
    assert w.shape == (64, 256)
    if not hasattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu"):
        pytest.skip("this torch has no CPU int4 kernel")
    # Same (q - 8) * scale + zero convention and (K/group, N, 2) scale layout as the CUDA op we time.
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(x.q.to(torch.int32), 2)
    sz = torch.stack([x.scales, x.zeros], dim=2).transpose(0, 1).contiguous()
    out = torch.ops.aten._weight_int4pack_mm_for_cpu(x.a, packed, 128, sz)
    assert rel_error(out, ref) < p.spec.tol
