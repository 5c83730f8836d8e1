"""Helpers of the sm90 tests: PTX from NVRTC, SASS from nvdisasm, opcode counts."""
from __future__ import annotations

import re
from collections import Counter

import tilecraft.runtime as rt
from tilecraft.runtime.disasm import find_tool
from tilecraft.runtime.disasm import sass as _sass


def ptx(source: str, arch: str = "sm_90a") -> str:
    """The PTX NVRTC makes of `source` for `arch`."""
    return rt.compile_ptx(source, arch=arch, name="sm90.cu")


def nvdisasm() -> str | None:
    """Path of an nvdisasm, or None."""
    return find_tool("nvdisasm")


def sass(cubin: bytes) -> str:
    """The nvdisasm disassembly of a cubin (call only when nvdisasm() found one)."""
    return _sass(cubin, "nvdisasm")


_OPCODE = re.compile(r"^\s*(?:/\*[0-9a-f]+\*/\s*)?(?:@!?U?P[T\d]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)", re.M)


def opcodes(sass_text: str) -> Counter[str]:
    """How often each full opcode (with its modifiers, e.g. 'HGMMA.64x128x16.F32') occurs."""
    return Counter(_OPCODE.findall(sass_text))


def count_prefix(ops: Counter[str], prefix: str) -> int:
    """How many instructions have an opcode that is `prefix` or starts with `prefix.`."""
    return sum(n for op, n in ops.items() if op == prefix or op.startswith(prefix + "."))
