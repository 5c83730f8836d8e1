"""Roofline arithmetic on known numbers."""
import pytest

from tilecraft.bench.problem import GemmProblem
from tilecraft.bench.roofline import (
    Ceilings,
    floor_time,
    gbps,
    gemm_bytes,
    gemm_flops,
    pct_of_floor,
    tflops,
)

H200 = Ceilings(device="H200", copy_bytes_per_s=4.3e12, flops_per_s={"bf16": 790e12})


def test_gemm_counts():
    assert gemm_flops(2, 3, 4) == 48
    assert gemm_bytes(2, 3, 4, 2, 2, 2) == (8 + 12 + 6) * 2
    assert gemm_bytes(1, 8, 16, 2, 0.5, 2) == 16 * 2 + 128 * 0.5 + 8 * 2


def test_floor_compute_bound_square():
    n = 8192
    f = H200.floor(gemm_flops(n, n, n), gemm_bytes(n, n, n, 2, 2, 2), "bf16")
    assert f.compute_seconds == pytest.approx(2 * n**3 / 790e12)  # 1.392 ms
    assert f.memory_seconds == pytest.approx(3 * n * n * 2 / 4.3e12)  # 93.6 us
    assert f.seconds == f.compute_seconds
    assert f.bound == "compute"
    assert f.seconds * 1e3 == pytest.approx(1.3918, rel=1e-4)


def test_floor_memory_bound_decode():
    # Llama-3-8B qkv at one token: the weight read is everything.
    p = GemmProblem(1, 6144, 4096, "bf16")
    f = H200.floor(p.flops, p.bytes, "bf16")
    assert p.bytes == 4096 * 2 + 6144 * 4096 * 2 + 6144 * 2
    assert f.bound == "memory"
    assert f.seconds == pytest.approx(50_352_128 / 4.3e12)  # 11.7 us
    assert f.seconds * 1e6 == pytest.approx(11.71, rel=1e-3)


def test_rates_and_percent():
    assert tflops(2e12, 0.5) == 4.0
    assert gbps(3e9, 1.5) == 2.0
    assert pct_of_floor(1.0, 2.0) == 50.0
    assert pct_of_floor(2.0, 2.0) == 100.0


def test_floor_time_validates():
    with pytest.raises(ValueError):
        floor_time(1, 1, 0, 1)
    with pytest.raises(ValueError):
        floor_time(-1, 1, 1, 1)
    f = floor_time(0, 0, 1, 1)
    assert f.seconds == 0


def test_ceilings_missing_dtype_and_round_trip():
    with pytest.raises(KeyError, match="fp8"):
        H200.peak_flops("fp8")
    d = H200.to_dict()
    assert d["copy_TBps"] == pytest.approx(4.3) and d["TFLOPs"]["bf16"] == pytest.approx(790)
    assert Ceilings.from_dict(d) == H200


def test_w4a16_bytes_count_packed_weights():
    p = GemmProblem(1, 4096, 4096, "w4a16")
    # half a byte per weight plus a bf16 scale and zero per group of 128
    assert p.bytes == pytest.approx(4096 * 2 + 4096 * 4096 * (0.5 + 4 / 128) + 4096 * 2)
