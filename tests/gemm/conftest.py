"""GPU tests in tests/gemm (marked gpu) skip cleanly without torch CUDA or a driver-visible device."""
from __future__ import annotations

import pytest


def _gpu_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [it for it in items if it.get_closest_marker("gpu") is not None and "tests/gemm" in str(it.path)]
    reason = _gpu_reason() if gpu_items else None
    for it in gpu_items if reason else ():
        it.add_marker(pytest.mark.skip(reason=f"needs a GPU: {reason}"))
