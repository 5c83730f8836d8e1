"""tilecraft's runtime: compile CUDA C++ with NVRTC (through cuda.core), cache it, launch it on torch tensors.

    import tilecraft.runtime as rt
    mod = rt.compile(source)                      # arch defaults to the current GPU (sm_90a on H100)
    mod.kernel("add")(out, x, y, n, grid=g, block=256)

Importing this package is cheap: cuda.core, cuda.bindings and torch load on first use.
"""
from __future__ import annotations

from tilecraft.runtime.cache import cache_dir
from tilecraft.runtime.compiler import (
    clear_memory_cache, compile, compile_ptx, include_dir, normalize_arch, nvrtc_version,
)
from tilecraft.runtime.device import DeviceInfo, device_count, device_info
from tilecraft.runtime.disasm import find_tool, sass
from tilecraft.runtime.errors import CompileError, LaunchError
from tilecraft.runtime.launch import Kernel
from tilecraft.runtime.module import Module, ResourceUsage

__all__ = [
    "CompileError",
    "DeviceInfo",
    "Kernel",
    "LaunchError",
    "Module",
    "ResourceUsage",
    "cache_dir",
    "clear_memory_cache",
    "compile",
    "compile_ptx",
    "device_count",
    "device_info",
    "find_tool",
    "sass",
    "include_dir",
    "normalize_arch",
    "nvrtc_version",
]
