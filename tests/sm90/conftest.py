"""GPU tests in tests/sm90 need a Hopper (compute capability 9.x) GPU; elsewhere they skip cleanly."""
from __future__ import annotations

import pytest


def _hopper_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False"
    major, minor = torch.cuda.get_device_capability()
    if major != 9:
        return f"the GPU is sm_{major}{minor}; TMA multicast and wgmma need sm_90a (Hopper)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [it for it in items if it.get_closest_marker("gpu") is not None and "tests/sm90" in str(it.path)]
    reason = _hopper_reason() if gpu_items else None
    for it in gpu_items if reason else ():
        it.add_marker(pytest.mark.skip(reason=f"needs a Hopper GPU: {reason}"))
