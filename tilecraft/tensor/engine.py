"""Engines: where a tensor's elements live. A tensor is an engine plus a layout; the layout yields
offsets and the engine reads or writes the element at an offset.

Host engines wrap a numpy array, a torch tensor (CPU or CUDA; element access goes through the host) or a
Python list, always as a flat view of the memory so a layout addresses it the way a pointer would. The
kernel language adds a pointer engine whose reads and writes are symbolic.
"""
from __future__ import annotations

from typing import Any

from tilecraft.layout import ArithTuple, ScaledBasis, is_tuple

__all__ = ["Engine", "NumpyEngine", "TorchEngine", "ListEngine", "CoordEngine", "as_engine", "engine_and_layout"]


class Engine:
    """Flat storage addressed by integer offsets."""

    dtype: Any = None
    kind: str = "engine"

    def __len__(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def read(self, offset: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def write(self, offset: Any, value: Any) -> None:
        raise TypeError(f"{self.kind} tensors are read-only")

    def new(self, n: int) -> "Engine":
        """Fresh storage of n elements of the same element type (for make_fragment_like)."""
        raise TypeError(f"cannot allocate storage like a {self.kind} tensor")

    def bits(self) -> int:
        """Bits per element."""
        raise TypeError(f"{self.kind} tensors have no element width")

    def recast(self, new_dtype: Any, offset: int) -> tuple["Engine", int]:
        raise TypeError(f"cannot recast a {self.kind} tensor")

    def describe(self) -> str:
        return f"{self.kind}[{self.dtype}]"


def _check_offset(engine: Engine, offset: Any) -> int:
    if not isinstance(offset, int):
        raise TypeError(f"offset {offset!r} is not a static integer: this host tensor needs concrete coordinates")
    if not 0 <= offset < len(engine):
        raise IndexError(f"offset {offset} is outside the storage of {len(engine)} elements")
    return offset


class _FlatArrayEngine(Engine):
    """A flat 1-D view of an array's memory (numpy or torch); element access goes through the host."""

    def __init__(self, flat: Any):
        self.flat = flat
        self.dtype = flat.dtype

    def __len__(self) -> int:
        return self.flat.shape[0]

    def read(self, offset: Any) -> Any:
        return self.flat[_check_offset(self, offset)].item()

    def write(self, offset: Any, value: Any) -> None:
        self.flat[_check_offset(self, offset)] = value

    def _recast_offset(self, offset: int, old_bytes: int, new_bytes: int, new_dtype: Any) -> int:
        if (offset * old_bytes) % new_bytes:
            raise ValueError(f"recast: offset {offset} of {self.dtype} is not aligned to {new_dtype}")
        if (len(self) * old_bytes) % new_bytes:
            raise ValueError(f"recast: {len(self)} elements of {self.dtype} do not fill whole {new_dtype} elements")
        return offset * old_bytes // new_bytes


class NumpyEngine(_FlatArrayEngine):
    """A flat 1-D numpy view of an array's memory."""

    kind = "numpy"

    def new(self, n: int) -> "NumpyEngine":
        import numpy as np
        return NumpyEngine(np.zeros(n, dtype=self.dtype))

    def bits(self) -> int:
        return self.flat.dtype.itemsize * 8

    def recast(self, new_dtype: Any, offset: int) -> tuple["NumpyEngine", int]:
        import numpy as np
        new_dtype = np.dtype(new_dtype)
        off = self._recast_offset(offset, self.flat.dtype.itemsize, new_dtype.itemsize, new_dtype)
        return NumpyEngine(self.flat.view(new_dtype)), off


class TorchEngine(_FlatArrayEngine):
    """A flat 1-D view of a torch tensor's memory (CPU or CUDA; element access goes through the host)."""

    kind = "torch"

    def new(self, n: int) -> "TorchEngine":
        import torch
        return TorchEngine(torch.zeros(n, dtype=self.dtype, device=self.flat.device))

    def bits(self) -> int:
        return self.flat.element_size() * 8

    def recast(self, new_dtype: Any, offset: int) -> tuple["TorchEngine", int]:
        import torch
        new_b = torch.empty((), dtype=new_dtype).element_size()
        off = self._recast_offset(offset, self.flat.element_size(), new_b, new_dtype)
        return TorchEngine(self.flat.view(new_dtype)), off

    def describe(self) -> str:
        return f"torch[{str(self.dtype).replace('torch.', '')}, {self.flat.device}]"


class ListEngine(Engine):
    """A Python list (writable) or tuple/range (read-only)."""

    kind = "list"

    def __init__(self, seq: Any):
        self.seq = seq
        self.dtype = type(seq[0]).__name__ if len(seq) else "object"

    def __len__(self) -> int:
        return len(self.seq)

    def read(self, offset: Any) -> Any:
        return self.seq[_check_offset(self, offset)]

    def write(self, offset: Any, value: Any) -> None:
        if not isinstance(self.seq, list):
            raise TypeError(f"a tensor over a {type(self.seq).__name__} is read-only; pass a list to write")
        self.seq[_check_offset(self, offset)] = value

    def new(self, n: int) -> "ListEngine":
        return ListEngine([0] * n)


class CoordEngine(Engine):
    """The engine of an identity tensor: the element at an 'offset' is the coordinate itself."""

    kind = "coord"

    def __init__(self, shape: Any):
        self.shape = shape
        self.dtype = "coord"

    def __len__(self) -> int:  # an identity tensor has no storage bound
        return 1 << 62

    def read(self, offset: Any) -> Any:
        return _as_coord(offset, self.shape)

    def describe(self) -> str:
        return "coord"


def _as_coord(v: Any, shape: Any) -> Any:
    """A basis-sum offset as a plain coordinate congruent with shape (missing modes are 0)."""
    if isinstance(v, ScaledBasis):
        v = ArithTuple.of(v)
    if isinstance(v, ArithTuple):
        v = v.value
    return _pad(v, shape)


def _pad(v: Any, shape: Any) -> Any:
    if is_tuple(shape):
        t = v if is_tuple(v) else (v,)
        t = t + (0,) * (len(shape) - len(t))
        return tuple(_pad(x, s) for x, s in zip(t, shape))
    return v


def _is_numpy(x: Any) -> bool:
    return type(x).__module__ == "numpy" and hasattr(x, "dtype") and hasattr(x, "strides")


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "storage_offset")


def engine_and_layout(x: Any) -> tuple[Engine, Any, Any]:
    """The engine over x's memory and x's own (shape, stride) in elements (stride None for 1-D sequences)."""
    if _is_numpy(x):
        import numpy as np
        item = x.itemsize
        if any(s < 0 for s in x.strides):
            raise ValueError("numpy arrays with negative strides are not supported; copy the array first")
        if any(s % item for s in x.strides):
            raise ValueError(f"numpy strides {x.strides} are not multiples of the element size {item}")
        strides = tuple(s // item for s in x.strides)
        span = 1 + sum((n - 1) * s for n, s in zip(x.shape, strides)) if x.size else 0
        flat = np.lib.stride_tricks.as_strided(x, shape=(span,), strides=(item,)) if x.ndim != 1 or strides != (1,) \
            else x
        shape = tuple(int(n) for n in x.shape)
        return NumpyEngine(flat), *_scalar_if_1d(shape, strides)
    if _is_torch(x):
        strides = tuple(int(s) for s in x.stride())
        if any(s < 0 for s in strides):
            raise ValueError("torch tensors with negative strides are not supported")
        span = 1 + sum((n - 1) * s for n, s in zip(x.shape, strides)) if x.numel() else 0
        flat = x.as_strided((span,), (1,))
        return TorchEngine(flat), *_scalar_if_1d(tuple(int(n) for n in x.shape), strides)
    if isinstance(x, (list, tuple, range)):
        return ListEngine(x), len(x), 1
    if isinstance(x, Engine):
        return x, len(x), 1
    raise TypeError(f"cannot make a tensor over {type(x).__name__}: use a numpy array, a torch tensor or a list")


def _scalar_if_1d(shape: tuple, strides: tuple) -> tuple[Any, Any]:
    """A 1-D array is the rank-1 layout n:s (as make_tensor(ptr, n) is in CuTe), not (n):(s)."""
    return (shape[0], strides[0]) if len(shape) == 1 else (shape, strides)


def as_engine(x: Any) -> Engine:
    """The engine over x's memory (flat)."""
    return engine_and_layout(x)[0]
