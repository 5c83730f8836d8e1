"""SASS of compiled kernels: cuobjdump or nvdisasm from PATH, the CUDA pip wheels
(``nvidia-cuda-cuobjdump``, ``nvidia-cuda-nvdisasm``) or Triton's copies. Nothing here needs a GPU."""
from __future__ import annotations

import os
import shutil
import site
import subprocess
import tempfile
from functools import lru_cache

__all__ = ["find_tool", "sass"]

_TOOLS = ("cuobjdump", "nvdisasm")


@lru_cache(maxsize=None)
def find_tool(name: str) -> str | None:
    """The path of the disassembler `name` ("cuobjdump" or "nvdisasm"), or None when none is installed."""
    if name not in _TOOLS:
        raise ValueError(f"unknown disassembler {name!r}; use one of {_TOOLS}")
    found = shutil.which(name)
    if found:
        return found
    for root in site.getsitepackages() + [site.getusersitepackages()]:
        for rel in (f"nvidia/cu13/bin/{name}", f"nvidia/cuda_{name}/bin/{name}", f"triton/backends/nvidia/bin/{name}"):
            path = os.path.join(root, rel)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


def sass(cubin: bytes, tool: str = "cuobjdump") -> str:
    """The disassembly of a cubin by `tool` (cuobjdump -sass, or nvdisasm). Raises RuntimeError when the
    tool is not installed (``pip install nvidia-cuda-cuobjdump`` / ``nvidia-cuda-nvdisasm``)."""
    path = find_tool(tool)
    if path is None:
        raise RuntimeError(f"no {tool} found: pip install nvidia-cuda-{tool}")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        args = [path, "-sass", f.name] if tool == "cuobjdump" else [path, f.name]
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout
