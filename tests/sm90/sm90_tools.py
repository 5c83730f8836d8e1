"""Helpers of the sm90 tests: PTX from NVRTC, SASS from nvdisasm, opcode counts."""
from __future__ import annotations

import re
from collections import Counter

import tilecraft.runtime as rt
from tilecraft.runtime.disasm import find_tool
from tilecraft.runtime.disasm import sass as _sass


def ptx(source: str, arch: str = "sm_90a") -> str:
    """The PTX NVRTC makes of `source` for `arch` (cuda.bindings directly: rt.compile keeps only cubins)."""
    from cuda.bindings import nvrtc
    from cuda.pathfinder import find_nvidia_header_directory

    def ok(result):
        err, *rest = result
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
        return rest[0] if rest else None

    includes = [str(rt.include_dir()), find_nvidia_header_directory("cudart")]
    opts = [f"--gpu-architecture=compute_{arch[3:]}".encode(), b"--std=c++17"] + \
        [f"--include-path={d}".encode() for d in includes if d]
    prog = ok(nvrtc.nvrtcCreateProgram(source.encode(), b"sm90.cu", 0, [], []))
    try:
        err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            log = b" " * ok(nvrtc.nvrtcGetProgramLogSize(prog))
            ok(nvrtc.nvrtcGetProgramLog(prog, log))
            raise AssertionError(log.decode())
        text = b" " * ok(nvrtc.nvrtcGetPTXSize(prog))
        ok(nvrtc.nvrtcGetPTX(prog, text))
        return text.decode().rstrip("\x00")
    finally:
        ok(nvrtc.nvrtcDestroyProgram(prog))


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
