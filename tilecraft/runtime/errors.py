"""Exceptions raised by the runtime: compile failures and launch failures."""
from __future__ import annotations

import re

# NVRTC front-end diagnostics look like `name(LINE): error: ...`.
_FRONTEND_LINE = re.compile(r"^(?P<file>[^\s(]+)\((?P<line>\d+)\): (?P<kind>error|warning|catastrophic error)", re.M)
# ptxas reports PTX lines, which do not map to the source; the instruction it names does.
_PTXAS_INSTRUCTION = re.compile(r"(?:[Ii]nstruction|Feature) '(?P<insn>[^']+)'")


class CompileError(RuntimeError):
    """NVRTC rejected a kernel source. Carries the full compiler log and the source lines it points at.

    Attributes: ``log`` (the NVRTC/ptxas log), ``source``, ``arch``, ``source_name`` and ``lines``
    (the 1-based source line numbers that the log blames).
    """

    def __init__(self, log: str, source: str, arch: str, source_name: str):
        self.log = log.strip()
        self.source = source
        self.arch = arch
        self.source_name = source_name
        self.lines = offending_lines(self.log, source, source_name)
        super().__init__(self._message())

    def _message(self) -> str:
        parts = [f"NVRTC failed to compile {self.source_name!r} for {self.arch}:", self.log]
        if self.lines:
            src = self.source.splitlines()
            parts.append("offending source lines:")
            parts.extend(f"  {n:5d} | {src[n - 1]}" for n in self.lines)
        return "\n".join(parts)


def offending_lines(log: str, source: str, source_name: str) -> list[int]:
    """Return the 1-based lines of `source` that a compiler log blames, in log order, without repeats.

    Front-end errors name the line directly. ptxas errors name a PTX line, so instead the source
    lines that contain the rejected instruction (usually inside inline asm) are returned.
    """
    nlines = source.count("\n") + 1
    found: list[int] = []
    for m in _FRONTEND_LINE.finditer(log):
        n = int(m.group("line"))
        if m.group("kind") != "warning" and m.group("file") == source_name and 1 <= n <= nlines and n not in found:
            found.append(n)
    for m in _PTXAS_INSTRUCTION.finditer(log):
        insn = m.group("insn")
        for i, text in enumerate(source.splitlines(), start=1):
            if insn in text and i not in found:
                found.append(i)
    return found


class LaunchError(RuntimeError):
    """A kernel launch was rejected by the driver, or the kernel faulted while running.

    The message names the kernel and its launch configuration; ``code`` is the CUDA error name
    (e.g. ``CUDA_ERROR_ILLEGAL_ADDRESS``). Bad arguments are caught before launching and raise
    TypeError or ValueError instead.
    """

    def __init__(self, message: str, *, kernel: str, config: str, code: str):
        self.kernel = kernel
        self.config = config
        self.code = code
        super().__init__(f"kernel {kernel!r} [{config}]: {message}")
