"""The disk cache: keys, permissions, integrity (corrupt/truncated entries recompile), concurrent writers."""
from __future__ import annotations

import multiprocessing as mp
import os
import stat
import warnings

import pytest

import tilecraft.runtime as rt
from tilecraft.runtime import cache, compiler

SRC = 'extern "C" __global__ void k(float* y, float a) { y[threadIdx.x] *= a; }'


@pytest.fixture
def nvrtc_calls(monkeypatch):
    """Count real NVRTC compiles."""
    calls = []
    real = compiler._nvrtc_compile

    def counting(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(compiler, "_nvrtc_compile", counting)
    return calls


def entries(d):
    return sorted(p for p in d.iterdir() if p.suffix == ".tck")


def test_dir_is_created_user_only(cache_dir):
    nested = cache_dir / "a" / "b"
    os.environ["TILECRAFT_CACHE_DIR"] = str(nested)
    old = os.umask(0o022)
    try:
        rt.compile(SRC, arch="sm_80")
    finally:
        os.umask(old)
    assert rt.cache_dir() == nested
    assert stat.S_IMODE(nested.stat().st_mode) == 0o700
    (entry,) = entries(nested)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_default_dir_is_under_home_cache(monkeypatch):
    monkeypatch.delenv("TILECRAFT_CACHE_DIR", raising=False)
    assert cache.cache_dir() == cache.Path.home() / ".cache" / "tilecraft"


def test_hit_in_memory_then_on_disk(cache_dir, nvrtc_calls):
    a = rt.compile(SRC, arch="sm_80")
    assert rt.compile(SRC, arch="sm_80") is a
    rt.clear_memory_cache()
    b = rt.compile(SRC, arch="sm_80")
    assert b is not a and b.cubin == a.cubin and b.log == a.log and b.resources == a.resources
    assert nvrtc_calls == ["sm_80"]
    c = rt.compile(SRC, arch="sm_80", cache=False)
    assert c is b  # the memory cache still answers
    assert len(entries(cache_dir)) == 1


def test_disk_hit_restores_kernel_declarations_without_parsing(cache_dir, monkeypatch):
    a = rt.compile(SRC, arch="sm_80")
    sigs = {n: a.kernel(n).signature for n in a.kernel_names}
    rt.clear_memory_cache()
    from tilecraft.runtime import module as module_mod

    def no_parse(source):
        raise AssertionError("a disk-cache hit re-parsed the source")

    monkeypatch.setattr(module_mod, "parse_signatures", no_parse)
    b = rt.compile(SRC, arch="sm_80")
    assert {n: b.kernel(n).signature for n in b.kernel_names} == sigs


def test_key_covers_source_options_arch_and_name():
    base = compiler.cache_key(SRC, "sm_90a", {}, "k.cu")
    assert base == compiler.cache_key(SRC, "sm_90a", {}, "k.cu")
    variants = {
        compiler.cache_key(SRC + " ", "sm_90a", {}, "k.cu"),
        compiler.cache_key(SRC, "sm_80", {}, "k.cu"),
        compiler.cache_key(SRC, "sm_90a", {"use_fast_math": True}, "k.cu"),
        compiler.cache_key(SRC, "sm_90a", {"define_macro": [("A", "1")]}, "k.cu"),
        compiler.cache_key(SRC, "sm_90a", {}, "other.cu"),
    }
    assert base not in variants and len(variants) == 5


def test_key_covers_nvrtc_and_tilecraft_versions(monkeypatch):
    import tilecraft

    base = compiler.cache_key(SRC, "sm_90a", {}, "k.cu")
    monkeypatch.setattr(tilecraft, "__version__", "999.0")
    assert compiler.cache_key(SRC, "sm_90a", {}, "k.cu") != base
    monkeypatch.undo()
    monkeypatch.setattr(compiler, "_nvrtc_identity", lambda: "99.9")
    assert compiler.cache_key(SRC, "sm_90a", {}, "k.cu") != base


def _damage_and_reload(cache_dir, nvrtc_calls, damage):
    good = rt.compile(SRC, arch="sm_80")
    (entry,) = entries(cache_dir)
    entry.write_bytes(damage(entry.read_bytes()))
    rt.clear_memory_cache()
    again = rt.compile(SRC, arch="sm_80")
    assert again.cubin == good.cubin
    assert nvrtc_calls == ["sm_80", "sm_80"]  # recompiled, not loaded
    body = cache.load(entry.stem, cache_dir)  # rewritten whole: passes the integrity check again
    assert body is not None and body.endswith(good.cubin)
    rt.clear_memory_cache()
    rt.compile(SRC, arch="sm_80")
    assert len(nvrtc_calls) == 2


def test_flipped_byte_in_body_is_recompiled(cache_dir, nvrtc_calls):
    def flip(data):
        i = len(data) - 100
        return data[:i] + bytes([data[i] ^ 0x40]) + data[i + 1 :]

    _damage_and_reload(cache_dir, nvrtc_calls, flip)


def test_truncated_entry_is_recompiled(cache_dir, nvrtc_calls):
    _damage_and_reload(cache_dir, nvrtc_calls, lambda data: data[: len(data) // 2])


def test_garbage_and_empty_entries_are_recompiled(cache_dir, nvrtc_calls):
    _damage_and_reload(cache_dir, nvrtc_calls, lambda data: b"")
    nvrtc_calls.clear()
    rt.clear_memory_cache()
    (entry,) = entries(cache_dir)
    entry.write_bytes(b"not a cache entry at all, but long enough to hold a header......")
    rt.compile(SRC, arch="sm_80")
    assert nvrtc_calls == ["sm_80"]


def test_load_rejects_wrong_length_field(cache_dir):
    key = "f" * 64
    assert cache.store(key, b"payload", cache_dir)
    path = cache.entry_path(key, cache_dir)
    assert cache.load(key, cache_dir) == b"payload"
    path.write_bytes(path.read_bytes() + b"extra")
    assert cache.load(key, cache_dir) is None
    assert not path.exists()


def _compile_in_child(cache_dir: str, arch: str) -> tuple[str, int]:
    os.environ["TILECRAFT_CACHE_DIR"] = cache_dir
    import hashlib

    import tilecraft.runtime as rt

    mod = rt.compile(SRC + "\n// shared by all workers", arch=arch)
    return hashlib.sha256(mod.cubin).hexdigest(), os.getpid()


def test_concurrent_writers_in_several_processes(cache_dir):
    ctx = mp.get_context("spawn")
    n = 6
    with ctx.Pool(n) as pool:
        results = pool.starmap(_compile_in_child, [(str(cache_dir), "sm_90a")] * (2 * n))
    digests = {d for d, _ in results}
    assert len(digests) == 1 and len({pid for _, pid in results}) > 1
    (entry,) = entries(cache_dir)
    assert not [p for p in cache_dir.iterdir() if p.name.endswith(".tmp")]
    rt.clear_memory_cache()
    body = cache.load(entry.stem, cache_dir)
    assert body is not None
    mod = rt.compile(SRC + "\n// shared by all workers", arch="sm_90a")
    import hashlib

    assert hashlib.sha256(mod.cubin).hexdigest() in digests


@pytest.mark.skipif(os.getuid() == 0, reason="root may write anywhere; permission checks differ")
def test_unwritable_dir_warns_and_still_compiles(cache_dir):
    cache_dir.mkdir(mode=0o500)
    try:
        with pytest.warns(RuntimeWarning, match="could not write"):
            assert rt.compile(SRC, arch="sm_80").cubin
    finally:
        cache_dir.chmod(0o700)


def test_world_writable_dir_is_refused(tmp_path, monkeypatch):
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(0o777)
    # Not ours to narrow: a directory other users could write is refused, not silently fixed up.
    monkeypatch.setattr(cache.os, "chmod", lambda *a: None)
    cache._checked.discard(str(d))
    cache._refused.discard(str(d))
    with pytest.warns(RuntimeWarning, match="writable by others"):
        assert not cache.store("0" * 64, b"x", d)
    assert not list(d.iterdir())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not cache.store("0" * 64, b"x", d)  # refused once, quietly afterwards


def test_usage_and_clear(cache_dir):
    rt.compile(SRC, arch="sm_80")
    rt.compile(SRC, arch="sm_90a")
    count, size = cache.usage()
    assert count == 2 and size > 1000
    assert cache.clear() == 2
    assert cache.usage() == (0, 0)
