"""How many input copies keep a rotation out of L2."""
import pytest

from tilecraft.bench.rotation import DEFAULT_L2_BYTES, copies_for_rotation, l2_cache_bytes

MB = 1024 * 1024


def test_example_from_the_issue():
    n = copies_for_rotation(32 * MB, 60 * MB, factor=3.0)
    assert n == 6  # ceil(180 / 32)
    assert n * 32 * MB >= 3 * 60 * MB
    assert (n - 1) * 32 * MB < 3 * 60 * MB  # and no more than needed


def test_small_and_large_inputs():
    # 1024^3 bf16: A+B = 4 MiB -> 45 copies to cover 180 MiB
    assert copies_for_rotation(4 * MB, 60 * MB) == 45
    # 70B gate_up weights alone are ~940 MB: one copy already overflows L2 many times
    assert copies_for_rotation(940 * MB, 60 * MB) == 1
    assert copies_for_rotation(180 * MB, 60 * MB) == 1
    assert copies_for_rotation(179 * MB, 60 * MB) == 2
    assert copies_for_rotation(1, 50 * MB, max_copies=100) == 100


def test_memory_cap_wins_but_keeps_one_copy():
    assert copies_for_rotation(32 * MB, 60 * MB, max_bytes=100 * MB) == 3
    assert copies_for_rotation(32 * MB, 60 * MB, max_bytes=1 * MB) == 1


def test_factor_and_validation():
    assert copies_for_rotation(10 * MB, 50 * MB, factor=2.0) == 10
    for bad in (dict(bytes_per_call=0, l2_bytes=1), dict(bytes_per_call=1, l2_bytes=0),
                dict(bytes_per_call=1, l2_bytes=1, factor=0)):
        with pytest.raises(ValueError):
            copies_for_rotation(**bad)


def test_l2_default_without_gpu():
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except Exception:
        has_gpu = False
    if has_gpu:
        assert l2_cache_bytes() > 0
    else:
        assert l2_cache_bytes() == DEFAULT_L2_BYTES == 60 * MB
