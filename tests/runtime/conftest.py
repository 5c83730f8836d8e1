"""GPU tests in tests/runtime skip cleanly when torch has no CUDA or the driver sees no device."""
from __future__ import annotations

import pytest


def _gpu_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False"
    from tilecraft.runtime import device_count

    if device_count() == 0:
        return "cuda.bindings finds no CUDA device"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [it for it in items if it.get_closest_marker("gpu") is not None and "tests/runtime" in str(it.path)]
    if not gpu_items:
        return
    reason = _gpu_reason()
    if reason is not None:
        for it in gpu_items:
            it.add_marker(pytest.mark.skip(reason=f"needs a GPU: {reason}"))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh, empty TILECRAFT_CACHE_DIR and an empty in-memory cache for the test."""
    from tilecraft.runtime import clear_memory_cache

    d = tmp_path / "tccache"
    monkeypatch.setenv("TILECRAFT_CACHE_DIR", str(d))
    clear_memory_cache()
    yield d
    clear_memory_cache()
