"""Facts about the GPU that kernels are tuned against: compute capability, SMs, shared memory, L2."""
from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any

_info: dict[int, DeviceInfo] = {}
_init_lock = threading.Lock()
_initialized = False


@dataclass(frozen=True)
class DeviceInfo:
    """One CUDA device as the driver reports it.

    ``arch`` is the NVRTC target compile() uses for it: ``sm_XY``, with the ``a`` suffix from
    compute capability 9.0 on (``sm_90a`` on H100/H200). Shared-memory sizes are bytes:
    ``max_shared_memory_per_block`` is the default 48 KB limit, ``..._optin`` the most a kernel
    may request after raising its attribute (compile/launch does that automatically).
    """

    index: int
    name: str
    compute_capability: tuple[int, int]
    arch: str
    sm_count: int
    max_shared_memory_per_block: int
    max_shared_memory_per_block_optin: int
    max_shared_memory_per_sm: int
    l2_cache_bytes: int
    max_threads_per_block: int
    warp_size: int
    total_memory_bytes: int
    cluster_launch: bool


def arch_for(major: int, minor: int) -> str:
    """Return the compile target for a compute capability: ``sm_90a`` for (9, 0), ``sm_80`` for (8, 0)."""
    return f"sm_{major}{minor}{'a' if major >= 9 else ''}"


def check(result: tuple[Any, ...], what: str) -> Any:
    """Unpack a cuda.bindings driver call's (CUresult, *values) and raise RuntimeError naming `what` on failure."""
    from cuda.bindings import driver

    err = result[0]
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{what} failed: {error_name(err)}")
    return result[1] if len(result) == 2 else result[1:]


def error_name(err: Any) -> str:
    """Return e.g. ``"CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)"`` for a CUresult."""
    from cuda.bindings import driver

    name = getattr(err, "name", str(err))
    res, text = driver.cuGetErrorString(err)
    if res == driver.CUresult.CUDA_SUCCESS and text:
        return f"{name} ({text.decode() if isinstance(text, bytes) else text})"
    return name


def init_driver() -> None:
    """Call cuInit once per process (idempotent, thread-safe); raises RuntimeError without a driver."""
    global _initialized
    if _initialized:
        return
    with _init_lock:
        if not _initialized:
            from cuda.bindings import driver

            check(driver.cuInit(0), "cuInit")
            _initialized = True


def device_count() -> int:
    """Return the number of CUDA devices; 0 when there is no driver or no GPU (never raises)."""
    try:
        from cuda.bindings import driver

        init_driver()
        return int(check(driver.cuDeviceGetCount(), "cuDeviceGetCount"))
    except Exception:
        return 0


def current_device() -> int:
    """Return the ordinal of the device work goes to now.

    That is torch's current device when torch has initialized CUDA, else the device of the
    current CUDA context, else 0.
    """
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return int(torch.cuda.current_device())
    from cuda.bindings import driver

    init_driver()
    err, dev = driver.cuCtxGetDevice()
    return int(dev) if err == driver.CUresult.CUDA_SUCCESS else 0


def device_info(index: int | None = None) -> DeviceInfo:
    """Return the DeviceInfo of device `index` (default: the current device). Raises RuntimeError without a GPU."""
    if index is None:
        if device_count() == 0:
            raise RuntimeError(
                "no CUDA device found (no driver or no GPU); pass compile(..., arch='sm_90a') to compile without one"
            )
        index = current_device()
    info = _info.get(index)
    if info is None:
        info = _query(index)
        _info[index] = info
    return info


def _query(index: int) -> DeviceInfo:
    from cuda.bindings import driver

    init_driver()
    count = check(driver.cuDeviceGetCount(), "cuDeviceGetCount")
    if not 0 <= index < count:
        raise ValueError(f"device {index} does not exist; this machine has {count} CUDA device(s)")
    dev = check(driver.cuDeviceGet(index), f"cuDeviceGet({index})")
    A = driver.CUdevice_attribute

    def attr(a: Any) -> int:
        return int(check(driver.cuDeviceGetAttribute(a, dev), f"cuDeviceGetAttribute({a.name})"))

    major = attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    minor = attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    raw_name = check(driver.cuDeviceGetName(256, dev), "cuDeviceGetName")
    name = raw_name.split(b"\0", 1)[0].decode() if isinstance(raw_name, bytes) else str(raw_name)
    return DeviceInfo(
        index=index,
        name=name,
        compute_capability=(major, minor),
        arch=arch_for(major, minor),
        sm_count=attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        max_shared_memory_per_block=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
        max_shared_memory_per_block_optin=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        max_shared_memory_per_sm=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        l2_cache_bytes=attr(A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
        max_threads_per_block=attr(A.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
        warp_size=attr(A.CU_DEVICE_ATTRIBUTE_WARP_SIZE),
        total_memory_bytes=int(check(driver.cuDeviceTotalMem(dev), "cuDeviceTotalMem")),
        cluster_launch=bool(attr(A.CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)),
    )
