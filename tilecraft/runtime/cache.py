"""The on-disk kernel cache: one file per compiled module, written atomically, checked on every load.

Layout: ``<cache_dir>/<key>.tck``, where ``key`` is the hex digest the compiler derives from the
source, options, arch and tool versions. Each file is a fixed header (magic, SHA-256 of the body,
body length) followed by the body, so a truncated or corrupted file is detected and recompiled
instead of being handed to the driver.
"""
from __future__ import annotations

import hashlib
import os
import stat
import struct
import tempfile
import warnings
from pathlib import Path

_MAGIC = b"TCKCACH1"
_HEADER = struct.Struct("<8s32sQ")
_SUFFIX = ".tck"
_ENV = "TILECRAFT_CACHE_DIR"

# Directories already checked (or created) in this process, and those refused as unsafe.
_checked: set[str] = set()
_refused: set[str] = set()


def cache_dir() -> Path:
    """Return the kernel cache directory: ``$TILECRAFT_CACHE_DIR`` if set, else ``~/.cache/tilecraft``.

    The directory is not created here; the first store creates it, user-only (mode 0700).
    """
    env = os.environ.get(_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "tilecraft"


def _usable_dir(root: Path) -> bool:
    """Create `root` user-only if missing; refuse (with one warning) a directory others could write.

    Compiled cubins are executed as-is, so a cache that another user can write into would let
    them run code in this process: that is refused rather than trusted.
    """
    key = str(root)
    if key in _checked:
        return True
    if key in _refused:
        return False
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = root.stat()
        if st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) != 0o700:
            # mkdir's mode is filtered by the umask, and a directory someone made by hand may
            # be wider than it should be; ours is always narrowed to the owner.
            os.chmod(root, 0o700)
            st = root.stat()
    except OSError as e:
        warnings.warn(f"tilecraft: kernel cache disabled, cannot create {root}: {e}", RuntimeWarning, stacklevel=3)
        _refused.add(key)
        return False
    if st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o022:
        warnings.warn(
            f"tilecraft: kernel cache disabled, {root} is owned by uid {st.st_uid} or writable by others "
            f"(mode {stat.S_IMODE(st.st_mode):o}); set {_ENV} to a private directory",
            RuntimeWarning,
            stacklevel=3,
        )
        _refused.add(key)
        return False
    _checked.add(key)
    return True


def entry_path(key: str, root: Path | None = None) -> Path:
    """Return the file that holds (or would hold) the cache entry for `key`."""
    return (root if root is not None else cache_dir()) / (key + _SUFFIX)


def load(key: str, root: Path | None = None) -> bytes | None:
    """Return the body stored under `key`, or None when it is absent or fails its integrity check.

    A damaged entry (wrong magic, short, or a body whose hash does not match) is deleted so the
    caller's recompile replaces it.
    """
    path = entry_path(key, root)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) >= _HEADER.size:
        magic, digest, length = _HEADER.unpack_from(data)
        body = data[_HEADER.size :]
        if magic == _MAGIC and length == len(body) and hashlib.sha256(body).digest() == digest:
            return body
    try:
        path.unlink()
    except OSError:
        pass
    return None


def store(key: str, body: bytes, root: Path | None = None) -> bool:
    """Write `body` under `key` atomically (temp file in the same directory, then rename).

    Several processes storing the same key at once is safe: each writes its own temp file and the
    last rename wins with a complete entry. Returns False (after a warning) if the write failed;
    the cache is an accelerator, so a failed write never fails the compile.
    """
    root = root if root is not None else cache_dir()
    if not _usable_dir(root):
        return False
    blob = _HEADER.pack(_MAGIC, hashlib.sha256(body).digest(), len(body)) + body
    fd, tmp = tempfile.mkstemp(dir=root, prefix=f".{key[:16]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, entry_path(key, root))
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        warnings.warn(f"tilecraft: could not write kernel cache entry in {root}: {e}", RuntimeWarning, stacklevel=2)
        return False
    return True


def usage(root: Path | None = None) -> tuple[int, int]:
    """Return (number of entries, total bytes) in the cache directory; (0, 0) if it does not exist."""
    root = root if root is not None else cache_dir()
    count = size = 0
    try:
        with os.scandir(root) as it:
            for e in it:
                if e.name.endswith(_SUFFIX) and e.is_file(follow_symlinks=False):
                    count += 1
                    size += e.stat(follow_symlinks=False).st_size
    except OSError:
        pass
    return count, size


def clear(root: Path | None = None) -> int:
    """Delete every cache entry (and stray temp file) in the cache directory; return how many were removed."""
    root = root if root is not None else cache_dir()
    removed = 0
    try:
        with os.scandir(root) as it:
            for e in it:
                if e.name.endswith(_SUFFIX) or (e.name.startswith(".") and e.name.endswith(".tmp")):
                    try:
                        os.unlink(e.path)
                        removed += 1
                    except OSError:
                        pass
    except OSError:
        pass
    return removed
