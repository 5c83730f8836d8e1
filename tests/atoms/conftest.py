"""Compiles in tests/atoms go to a fresh cache directory, so each test really runs NVRTC and ptxas."""
from __future__ import annotations

import pytest


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh, empty TILECRAFT_CACHE_DIR and an empty in-memory cache for the test."""
    from tilecraft.runtime import clear_memory_cache

    d = tmp_path / "tccache"
    monkeypatch.setenv("TILECRAFT_CACHE_DIR", str(d))
    clear_memory_cache()
    yield d
    clear_memory_cache()
