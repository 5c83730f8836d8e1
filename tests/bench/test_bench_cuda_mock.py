"""The CUDA-event timing path's control flow, on the CPU, with torch.cuda's events faked by the host
clock. What it cannot check (real event semantics, the GPU spin) is covered by test_bench_gpu.py."""
import time

import pytest

torch = pytest.importorskip("torch")

from tilecraft.bench import timing  # noqa: E402
from tilecraft.bench.timing import Timer  # noqa: E402


class FakeEvent:
    def __init__(self, enable_timing=False):
        assert enable_timing
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


@pytest.fixture
def fake_cuda(monkeypatch):
    sleeps = []
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: sleeps.append(cycles), raising=False)
    monkeypatch.setattr(timing, "_sleep_cycles_per_ms", 1.0e6)
    return sleeps


def test_cuda_path_rotates_and_counts(fake_cuda):
    seen = []

    def fn(x):
        seen.append(x)
        t = time.perf_counter()
        while time.perf_counter() - t < 1e-4:
            pass

    res = Timer(device="cuda", reps=150, warmup_ms=0, gpu_sleep=False)(fn, [0, 1, 2, 3])
    assert res.method == "cuda-events" and res.n == 150 and res.n_arg_sets == 4
    assert len(seen) == res.warmup_calls + 150
    assert all(a != b for a, b in zip(seen, seen[1:]))
    assert res.median_ms >= 0.1
    assert fake_cuda == []  # gpu_sleep=False: never spins


def test_cuda_path_spins_when_host_bound(fake_cuda):
    # A call whose "GPU time" (between fake events) is about its host time counts as launch-bound.
    res = Timer(device="cuda", reps=130, warmup_ms=0)(lambda: None)
    assert res.gpu_sleep
    assert len(fake_cuda) == 3  # one spin per batch of 64 calls: 64 + 64 + 2
    assert all(c > 0 for c in fake_cuda)


def test_cuda_path_batches_calls_per_sample(fake_cuda):
    # calls_per_sample = 8: 160 timed calls in 20 samples, one event pair around 8 back-to-back calls,
    # each sample the pair's time over 8; the rotation goes on across the samples.
    seen = []

    def fn(x):
        seen.append(x)
        t = time.perf_counter()
        while time.perf_counter() - t < 2e-4:
            pass

    res = Timer(device="cuda", reps=160, warmup_ms=0, gpu_sleep=False, calls_per_sample=8)(fn, [0, 1, 2])
    assert res.n == 20 and res.calls_per_sample == 8 and res.to_dict()["calls_per_sample"] == 8
    assert len(seen) == res.warmup_calls + 160
    assert all(a != b for a, b in zip(seen, seen[1:]))
    assert 0.2 <= res.median_ms < 1.6  # per call (~0.2 ms), not per sample (~1.6 ms)


def test_cuda_path_spin_covers_every_call_of_a_batch(fake_cuda):
    # host-bound calls: the spins cover the enqueue of all calls of their samples
    res = Timer(device="cuda", reps=640, warmup_ms=0, calls_per_sample=32)(lambda: None)
    assert res.gpu_sleep and res.n == 20
    assert 1 <= len(fake_cuda) <= 20 and all(c > 0 for c in fake_cuda)


@pytest.mark.parametrize("per", [0, -1, 1.5, True])
def test_calls_per_sample_must_be_a_positive_int(fake_cuda, per):
    with pytest.raises(ValueError, match="calls_per_sample"):
        Timer(device="cuda", reps=10, warmup_ms=0, calls_per_sample=per)(lambda: None)
    with pytest.raises(ValueError, match="calls_per_sample"):
        Timer(device="cpu", reps=10, warmup_ms=0, calls_per_sample=per)(lambda: None)


def test_host_path_batches_calls_per_sample():
    calls = []
    res = Timer(device="cpu", reps=40, warmup_ms=0, calls_per_sample=4)(lambda: calls.append(1))
    assert res.method == "host-clock" and res.n == 10 and res.calls_per_sample == 4
    assert len(calls) == res.warmup_calls + 40
