"""GPU tests in tests/sm90 need a Hopper (compute capability 9.x) GPU; elsewhere they skip cleanly
(tests/conftest.py skips every GPU test where there is no GPU at all)."""
from __future__ import annotations

import pytest


def _hopper_reason() -> str | None:
    """Why a GPU that exists cannot run these tests (None where it can, or where there is no GPU)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability()
    if major != 9:
        return f"the GPU is sm_{major}{minor}; TMA multicast and wgmma need sm_90a (Hopper)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [it for it in items if it.get_closest_marker("gpu") is not None and "tests/sm90" in str(it.path)]
    reason = _hopper_reason() if gpu_items else None
    for it in gpu_items if reason else ():
        it.add_marker(pytest.mark.skip(reason=f"needs a Hopper GPU: {reason}"))
