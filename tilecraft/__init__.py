"""tilecraft: CuTe and CUTLASS in Python.

The layout algebra and host tensors load eagerly (pure Python); the GPU stack (cuda.core, torch) loads
only when a GPU layer is first touched, so `import tilecraft` stays fast.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

from tilecraft.layout import *  # noqa: F401,F403  (the layout layer defines __all__)
from tilecraft.layout import __all__ as _layout_all

_LAZY_SUBMODULES = ("runtime", "bench", "dsl", "atoms", "gemm")


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"tilecraft.{name}")
    raise AttributeError(f"module 'tilecraft' has no attribute {name!r}")


__all__ = list(_layout_all) + ["__version__"]
