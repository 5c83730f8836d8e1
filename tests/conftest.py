"""Shared test setup: tests marked `gpu` skip cleanly without a usable CUDA GPU; `cache_dir` isolates the
kernel cache so a test really runs NVRTC and ptxas."""
from __future__ import annotations

import functools

import pytest


@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason() -> str | None:
    """Why GPU tests cannot run here (None when they can)."""
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
    gpu_items = [it for it in items if it.get_closest_marker("gpu") is not None]
    reason = gpu_unavailable_reason() if gpu_items else None
    for it in gpu_items if reason else ():
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


@pytest.fixture(autouse=True)
def _forget_call_plans():
    """Each test's tc.gemm / mixed-input calls are decided afresh: the per-signature plans of one test (made under its
    monkeypatches, e.g. a faked GPU or a recording launch) must not answer another's calls of the same signature."""
    yield
    import sys

    op = sys.modules.get("tilecraft.gemm.op")
    if op is not None:
        op.clear_plans()
