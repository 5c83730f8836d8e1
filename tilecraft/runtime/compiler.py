"""compile(): CUDA C++ source -> cubin through NVRTC (via cuda.core), with a memory and a disk cache."""
from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import re
import sys
import threading
from collections.abc import Mapping
from dataclasses import astuple
from functools import lru_cache
from pathlib import Path
from typing import Any

from tilecraft.runtime import cache as _disk
from tilecraft.runtime.errors import CompileError
from tilecraft.runtime.module import Module

# Bump when the cache body layout or key recipe changes, so old entries are never misread.
_CACHE_FORMAT = 1
_META_LEN = struct.Struct("<I")
# Options compile() itself decides; the caller sets them through compile()'s own arguments.
_RESERVED_OPTIONS = {"arch": "arch=", "name": "name="}

_memory: dict[str, Module] = {}
_memory_lock = threading.Lock()


def include_dir() -> Path:
    """Return the directory tilecraft adds to every compile's include path (holds ``tilecraft/tilecraft.cuh``)."""
    return Path(__file__).resolve().parent.parent / "include"


@lru_cache(maxsize=1)
def _header_digest() -> str:
    # Headers are part of what a cached cubin was built from; hashing their text (not just the
    # tilecraft version) keeps an edited checkout from loading stale kernels.
    h = hashlib.sha256()
    for p in sorted((include_dir() / "tilecraft").glob("*")):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@lru_cache(maxsize=1)
def _cuda_include_dir() -> str | None:
    from cuda.pathfinder import find_nvidia_header_directory

    return find_nvidia_header_directory("cudart")


@lru_cache(maxsize=1)
def nvrtc_version() -> str:
    """Return the version of the NVRTC library cuda.bindings loads, e.g. ``"13.0"``."""
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"nvrtcVersion failed: {err!r}")
    return f"{major}.{minor}"


_NVRTC_WHEEL = re.compile(r"nvidia_cuda_nvrtc(?:_cu\d+)?-(?P<version>[\w.]+)\.dist-info")


@lru_cache(maxsize=1)
def _nvrtc_identity() -> str:
    # Loading libnvrtc just to ask its version costs ~11 ms, more than a whole disk-cache hit
    # should. When exactly one NVRTC wheel is installed, cuda.bindings loads that one (site-packages
    # come first in its search), and the wheel's version names it exactly; otherwise ask NVRTC.
    found = set()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        found.update(m.group("version") for m in map(_NVRTC_WHEEL.fullmatch, names) if m)
    if len(found) == 1:
        return "wheel-" + found.pop()
    # Several (or no) NVRTC wheels: ask the library once per environment and remember the answer
    # in the cache directory, keyed by the wheels present, so fresh processes skip loading it.
    tag = hashlib.sha256(repr(sorted(found)).encode()).hexdigest()[:16]
    memo = _disk.cache_dir() / f"nvrtc-identity-{tag}.txt"
    try:
        text = memo.read_text()
        if text.startswith("nvrtc "):
            return text.strip()
    except OSError:
        pass
    ident = "nvrtc " + nvrtc_version()
    try:
        if _disk._usable_dir(_disk.cache_dir()):
            tmp = memo.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(ident)
            os.replace(tmp, memo)
    except OSError:
        pass
    return ident


def normalize_arch(arch: str | int | tuple[int, int]) -> str:
    """Return the canonical ``sm_XY[a|f]`` spelling of an arch given as ``"sm_90a"``, ``"90a"`` or ``90``.

    A (major, minor) compute capability maps as the default does: ``(9, 0)`` -> ``"sm_90a"``.
    Raises ValueError for anything else (including ``compute_XY``: compile() always produces a cubin).
    """
    if isinstance(arch, tuple) and len(arch) == 2 and all(isinstance(v, int) for v in arch):
        from tilecraft.runtime.device import arch_for

        return arch_for(*arch)
    if isinstance(arch, int) and not isinstance(arch, bool) and arch > 0:
        return f"sm_{arch}"
    if isinstance(arch, str):
        s = arch.strip().lower()
        for prefix in ("sm_", "sm"):
            if s.startswith(prefix):
                s = s[len(prefix) :]
                break
        digits = s.rstrip("af")
        if digits.isdigit() and len(s) - len(digits) <= 1 and len(digits) >= 2:
            return f"sm_{s}"
    raise ValueError(f"arch {arch!r} is not an SM architecture; expected e.g. 'sm_90a', 'sm_80', 90 or (9, 0)")


def default_arch() -> str:
    """Return the arch of the current device: ``sm_XY``, with the ``a`` suffix on compute capability 9.0 and later.

    The ``a`` (architecture-specific) target is what lets Hopper's wgmma and setmaxnreg assemble.
    Raises RuntimeError when there is no usable GPU; pass an explicit arch there.
    """
    from tilecraft.runtime.device import device_info

    return device_info().arch


def cache_key(source: str, arch: str, options: Mapping[str, Any], name: str) -> str:
    """Return the hex digest that identifies a compile: source, options, arch, NVRTC and tilecraft versions, headers."""
    from tilecraft import __version__

    recipe = [
        _CACHE_FORMAT,
        __version__,
        _nvrtc_identity(),
        arch,
        name,
        json.dumps(dict(options), sort_keys=True, default=repr),
        _header_digest(),
        source,
    ]
    return hashlib.sha256(json.dumps(recipe).encode()).hexdigest()


def compile(
    source: str,
    *,
    arch: str | int | tuple[int, int] | None = None,
    options: Mapping[str, Any] | None = None,
    name: str = "kernel.cu",
    cache: bool = True,
) -> Module:
    """Compile CUDA C++ `source` to a cubin with NVRTC and return a Module whose kernels can be launched.

    `arch` defaults to the current GPU (``sm_90a`` on an H100); with no GPU it must be given, e.g.
    ``"sm_90a"`` or ``"sm_80"``. `options` are extra ``cuda.core.ProgramOptions`` fields (e.g.
    ``{"use_fast_math": True, "define_macro": [("BM", "128")], "max_register_count": 168}``);
    ``std`` defaults to ``"c++17"``, ``-v`` is always passed to ptxas so that each kernel's
    registers, shared memory and spills are on ``Module.resources``, and the tilecraft header
    directory plus the CUDA toolkit headers are on the include path. `name` is the file name that
    diagnostics refer to.

    Results are cached in memory and, when `cache` is true, on disk (see ``cache_dir()``); the key
    covers source, options, arch, NVRTC version, tilecraft version and tilecraft's headers (not the
    contents of headers under your own include paths). Raises CompileError with the log and the
    offending source lines when NVRTC rejects the source.
    """
    if not isinstance(source, str):
        raise TypeError(f"source must be str, got {type(source).__name__}")
    opts = dict(options or {})
    for key, instead in _RESERVED_OPTIONS.items():
        if key in opts:
            raise ValueError(f"options[{key!r}] is set by compile() itself; pass compile(..., {instead}...) instead")
    target = normalize_arch(arch) if arch is not None else default_arch()
    key = cache_key(source, target, opts, name)

    module = _memory.get(key)
    if module is not None:
        return module
    body = _disk.load(key) if cache else None
    if body is not None:
        module = _decode(body, source, key)
    else:
        module = _nvrtc_compile(source, target, opts, name, key)
        if cache:
            _disk.store(key, _encode(module))
    with _memory_lock:
        return _memory.setdefault(key, module)


def compile_ptx(source: str, *, arch: str = "sm_90a", name: str = "kernel.cu") -> str:
    """The PTX NVRTC makes of `source` for `arch` (for reading what the compiler emitted; ``compile``
    keeps only cubins). Uses the same headers as ``compile``; raises CompileError on failure."""
    from cuda.bindings import nvrtc

    arch = normalize_arch(arch)

    def ok(result: Any) -> Any:
        err, *rest = result
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"NVRTC: {err}")
        return rest[0] if rest else None

    includes = [str(include_dir())] + ([_cuda_include_dir()] if _cuda_include_dir() else [])
    opts = [f"--gpu-architecture=compute_{arch[3:]}".encode(), b"--std=c++17"] + \
        [f"--include-path={d}".encode() for d in includes]
    prog = ok(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []))
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            log = b" " * ok(nvrtc.nvrtcGetProgramLogSize(prog))
            ok(nvrtc.nvrtcGetProgramLog(prog, log))
            raise CompileError(log.decode(errors="replace").rstrip("\x00"), source, arch, name)
        text = b" " * ok(nvrtc.nvrtcGetPTXSize(prog))
        ok(nvrtc.nvrtcGetPTX(prog, text))
        return text.decode().rstrip("\x00")
    finally:
        ok(nvrtc.nvrtcDestroyProgram(prog))


def clear_memory_cache() -> None:
    """Forget every module compiled in this process (the disk cache is untouched)."""
    with _memory_lock:
        _memory.clear()


def _nvrtc_options(arch: str, opts: dict[str, Any], name: str) -> dict[str, Any]:
    def as_list(v: Any) -> list[Any]:
        return [] if v is None else [v] if isinstance(v, str) else list(v)

    kw = dict(opts)
    kw["arch"] = arch
    kw["name"] = name
    kw.setdefault("std", "c++17")
    kw["ptxas_options"] = ["-v"] + [o for o in as_list(kw.get("ptxas_options")) if o not in ("-v", "--verbose")]
    # NVRTC's own compile cache answers a repeated compile without running ptxas, so the resource
    # report (registers, spills) would be missing; our cache sits in front of it anyway.
    kw.setdefault("no_cache", True)
    includes = [str(include_dir())]
    cuda_inc = _cuda_include_dir()
    if cuda_inc:
        includes.append(cuda_inc)
    kw["include_path"] = as_list(kw.get("include_path")) + includes
    return kw


def _nvrtc_compile(source: str, arch: str, opts: dict[str, Any], name: str, key: str) -> Module:
    from cuda.core import Program, ProgramOptions

    kw = _nvrtc_options(arch, opts, name)
    try:
        program_options = ProgramOptions(**kw)
    except TypeError as e:
        raise ValueError(f"invalid NVRTC option in {sorted(opts)}: {e}") from None
    program = Program(source, "c++", program_options)
    log = io.StringIO()
    failure = None
    try:
        code = program.compile("cubin", logs=log)
    except Exception as e:
        # cuda.core raises NVRTCError with the compiler log in the message (the `logs` sink is
        # only filled on success); keep any other failure as it is.
        if type(e).__name__ != "NVRTCError":
            raise
        failure = _log_from_error(str(e))
    finally:
        program.close()
    # Raised only once the Program is released: a traceback that still reached it would keep it
    # in a reference cycle, and cuda.core's finalizer then fails noisily during garbage collection.
    del program
    if failure is not None:
        raise CompileError(failure, source, arch, name)
    return Module(bytes(code.code), arch=arch, log=_clean(log.getvalue()), key=key, source=source, name=name)


def _clean(log: str) -> str:
    return log.replace("\x00", "").strip()


def _log_from_error(message: str) -> str:
    marker = "compilation log:"
    i = message.find(marker)
    return _clean(message[i + len(marker) :] if i >= 0 else message)


def _encode(module: Module) -> bytes:
    # The parsed kernel declarations travel with the cubin: re-parsing a large generated source
    # would cost a cache hit more than everything else together.
    decls = {
        name: [None if d.params is None else [astuple(p) for p in d.params], d.error]
        for name, d in module._declarations().items()
    }
    meta = json.dumps({"arch": module.arch, "log": module.log, "name": module.name, "decls": decls}).encode()
    return _META_LEN.pack(len(meta)) + meta + module.cubin


def _decode(body: bytes, source: str, key: str) -> Module:
    from tilecraft.runtime.signature import KernelDecl, Param

    (n,) = _META_LEN.unpack_from(body)
    meta = json.loads(body[_META_LEN.size : _META_LEN.size + n])
    module = Module(
        body[_META_LEN.size + n :], arch=meta["arch"], log=meta["log"], key=key, source=source, name=meta["name"]
    )
    if "decls" in meta:
        module._decls = {
            name: KernelDecl(name, None if ps is None else tuple(Param(*p) for p in ps), err)
            for name, (ps, err) in meta["decls"].items()
        }
    return module
