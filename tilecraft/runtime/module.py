"""Module: a compiled cubin, its ptxas resource report, and lookup of its kernels."""
from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tilecraft.runtime.signature import KernelDecl, param_from_ctype, parse_signatures

if TYPE_CHECKING:
    from tilecraft.runtime.launch import Kernel

_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>[^']+)'")
_PROPS = re.compile(
    r"Function properties for (?P<name>\S+)\s*\n.*?(?P<stack>\d+) bytes stack frame, "
    r"(?P<stores>\d+) bytes spill stores, (?P<loads>\d+) bytes spill loads"
)
_USED = re.compile(r"Used (?P<regs>\d+) registers(?P<rest>[^\n]*)")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")


@dataclass(frozen=True)
class ResourceUsage:
    """What ptxas reported for one kernel: registers per thread, static shared memory, spills.

    ``smem_bytes`` is static shared memory only; dynamic shared memory is chosen at launch.
    """

    registers: int
    smem_bytes: int
    stack_frame_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    barriers: int
    cmem_bytes: int

    @property
    def spills(self) -> bool:
        """True if the kernel spills registers to local memory."""
        return self.spill_store_bytes > 0 or self.spill_load_bytes > 0


def parse_resource_usage(log: str) -> dict[str, ResourceUsage]:
    """Parse ``ptxas -v`` output into {kernel name: ResourceUsage}, one entry per compiled entry function."""
    out: dict[str, ResourceUsage] = {}
    starts = list(_ENTRY.finditer(log))
    for i, m in enumerate(starts):
        name = m.group("name")
        section = log[m.end() : starts[i + 1].start() if i + 1 < len(starts) else len(log)]
        used = _USED.search(section)
        if used is None:
            continue
        rest = used.group("rest")
        stack = stores = loads = 0
        for p in _PROPS.finditer(section):
            if p.group("name") == name:
                stack, stores, loads = int(p.group("stack")), int(p.group("stores")), int(p.group("loads"))
        out[name] = ResourceUsage(
            registers=int(used.group("regs")),
            smem_bytes=_first_int(_SMEM, rest),
            stack_frame_bytes=stack,
            spill_store_bytes=stores,
            spill_load_bytes=loads,
            barriers=_first_int(_BARRIERS, rest),
            cmem_bytes=_first_int(_CMEM, rest),
        )
    return out


def _first_int(pattern: re.Pattern[str], text: str) -> int:
    m = pattern.search(text)
    return int(m.group(1)) if m else 0


class Module:
    """A compiled cubin and its kernels. Built by ``compile()``; loaded onto the GPU on first kernel use.

    Attributes: ``cubin`` (bytes), ``arch`` (e.g. ``"sm_90a"``), ``log`` (NVRTC/ptxas log, including
    the ``-v`` resource report), ``key`` (cache key), ``source``, ``name`` (source file name) and
    ``resources`` ({kernel: ResourceUsage}).
    """

    def __init__(self, cubin: bytes, *, arch: str, log: str, key: str, source: str, name: str):
        self.cubin = cubin
        self.arch = arch
        self.log = log
        self.key = key
        self.source = source
        self.name = name
        self.resources = parse_resource_usage(log)
        self._decls: dict[str, KernelDecl] | None = None
        self._object_code: Any = None
        self._kernels: dict[tuple[str, tuple[str, ...] | None], Kernel] = {}
        self._lock = threading.Lock()

    @property
    def kernel_names(self) -> tuple[str, ...]:
        """Names of the `__global__` functions declared in the source (C-linkage or not)."""
        return tuple(self._declarations())

    def _declarations(self) -> dict[str, KernelDecl]:
        if self._decls is None:
            self._decls = parse_signatures(self.source)
        return self._decls

    def kernel(self, name: str, *, params: Sequence[str] | None = None) -> Kernel:
        """Return the launchable kernel `name`.

        Parameter types come from the kernel's `extern "C" __global__` declaration in the source;
        pass `params` as C type strings (e.g. ``["const float*", "int", "CUtensorMap"]``) to declare
        them yourself, e.g. when the declaration is built by macros. Raises KeyError for an unknown
        name and ValueError when the declaration cannot be used.
        """
        cache_key = (name, tuple(params) if params is not None else None)
        k = self._kernels.get(cache_key)
        if k is not None:
            return k
        from tilecraft.runtime.launch import Kernel

        if params is not None:
            decl = KernelDecl(name, tuple(param_from_ctype(c, f"arg{i}") for i, c in enumerate(params)), None)
        else:
            decls = self._declarations()
            if name not in decls:
                raise KeyError(f"no __global__ function {name!r} in {self.name}; declared: {sorted(decls) or 'none'}")
            decl = decls[name]
            if decl.params is None:
                raise ValueError(f"{self.name}: {decl.error}; pass params=[...] to declare the parameter types")
        assert decl.params is not None
        k = Kernel(self, name, decl.params)
        with self._lock:
            return self._kernels.setdefault(cache_key, k)

    def __getitem__(self, name: str) -> Kernel:
        """``module["gemm"]`` is ``module.kernel("gemm")``."""
        return self.kernel(name)

    def _load(self) -> Any:
        """Load the cubin through cuda.core (once) and return the ObjectCode."""
        if self._object_code is None:
            with self._lock:
                if self._object_code is None:
                    from cuda.core import ObjectCode

                    self._object_code = ObjectCode.from_cubin(self.cubin, name=self.name)
        return self._object_code

    def __repr__(self) -> str:
        return f"<tilecraft Module {self.name} {self.arch} kernels={list(self.kernel_names)}>"
