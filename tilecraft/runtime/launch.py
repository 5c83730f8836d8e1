"""Kernel: launch a compiled kernel on torch tensors and scalars, with little host overhead.

Each kernel gets a launcher generated for its exact signature on first launch: arguments are
packed with one precompiled ``struct`` format (by-value structs such as TMA descriptors included, as ``Ns``
fields) into a buffer whose per-parameter addresses were computed once, and the driver's ``cuLaunchKernel``
(``cuLaunchKernelEx`` for clusters, programmatic dependent and cooperative launches) is called directly.
Launch configurations are normalized once and cached, so a repeated launch costs a dict lookup, a device check
per tensor, one ``pack_into`` and the driver call (``Kernel.launcher``: no lookup, for one configuration).
"""
from __future__ import annotations

import ctypes
import os
import struct
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tilecraft.runtime.errors import LaunchError
from tilecraft.runtime.signature import Param

if TYPE_CHECKING:
    from tilecraft.runtime.module import Module, ResourceUsage

Dim3 = tuple[int, int, int]
_DEFAULT_SMEM_LIMIT = 48 * 1024
_PORTABLE_CLUSTER_SIZE = 8
_RESERVED_NAMES = frozenset({"grid", "block", "smem", "cluster", "pdl", "cooperative", "stream", "sync"})
# torch dtypes a pointer parameter accepts, by the pointee's struct code. Integer pointees accept
# either signedness of the right width (torch has little unsigned support); floats must match.
_POINTEE_DTYPES = {
    "f": ("float32",),
    "d": ("float64",),
    "e": ("float16",),
    "bf16": ("bfloat16",),
    "?": ("bool",),
    "b": ("int8", "uint8"),
    "B": ("uint8", "int8"),
    "h": ("int16", "uint16"),
    "H": ("uint16", "int16"),
    "i": ("int32", "uint32"),
    "I": ("uint32", "int32"),
    "q": ("int64", "uint64"),
    "Q": ("uint64", "int64"),
}


def _dim3(value: Any, what: str) -> Dim3:
    dims = (value,) if isinstance(value, int) else tuple(value) if isinstance(value, (tuple, list)) else None
    if (
        dims is None
        or not 1 <= len(dims) <= 3
        or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims)
    ):
        raise ValueError(f"{what} must be a positive int or a tuple of 1-3 positive ints, got {value!r}")
    return (dims + (1, 1))[:3]  # type: ignore[return-value]


@dataclass
class _Config:
    """A normalized launch configuration: grid (in blocks), block, cluster (or None), dynamic smem bytes,
    and whether the launch is a programmatic dependent one (``pdl``) and a cooperative one (``cooperative``)."""

    grid: Dim3
    block: Dim3
    cluster: Dim3 | None
    smem: int
    dims: tuple[int, ...] = ()  # grid + block, as cuLaunchKernel takes them
    ex: Any = None  # the driver's CUlaunchConfig, only for cluster, programmatic dependent and cooperative launches
    pdl: bool = False
    cooperative: bool = False
    ready: set[int] = field(default_factory=set)  # devices whose kernel attributes allow this config

    def describe(self, stream: int | None = None) -> str:
        """Return e.g. ``'grid=(132, 1, 1) block=(128, 1, 1) smem=0'`` for messages."""
        s = f"grid={self.grid} block={self.block}"
        if self.cluster is not None:
            s += f" cluster={self.cluster}"
        s += f" smem={self.smem}"
        if self.pdl:
            s += " pdl"
        if self.cooperative:
            s += " cooperative"
        if stream is not None:
            s += f" stream={stream:#x}"
        return s


class Kernel:
    """A launchable kernel of a compiled Module, with the parameter types it declares.

    Call it (or ``.launch``) with the kernel's arguments in order and keyword launch settings::

        k(out, a, b, n, 2.0, grid=(n // 256,), block=256)

    ``grid`` counts blocks (as in CUDA C++), also with a ``cluster``; ``smem`` is dynamic shared
    memory in bytes (over 48 KB the kernel's limit is raised automatically); ``pdl=True`` makes it a
    programmatic dependent launch (sm_90+): the kernel may start before the previous kernel of the stream
    has finished, once that kernel's blocks have all executed ``griddepcontrol.launch_dependents`` (or
    exited), so it must execute ``griddepcontrol.wait`` before it touches memory the previous kernel
    reads or writes (tilecraft.dsl.hopper.griddep_wait); ``cooperative=True`` makes it a cooperative launch:
    the driver starts its blocks only all together (it refuses a grid the GPU cannot hold at once, with
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE), which a kernel whose blocks wait on each other needs where
    other kernels may hold SMs (another stream, another MPS client); ``stream`` defaults to
    torch's current stream and may be a torch stream, a cuda.core Stream or a raw handle;
    ``sync=True`` (or the environment variable ``TILECRAFT_LAUNCH_BLOCKING=1``) waits for the kernel
    so that a fault raises LaunchError naming this kernel.

    Arguments: pointer parameters take CUDA torch tensors on the launch device (their dtype must
    match the pointee type when that is a plain scalar), objects with ``__cuda_array_interface__``,
    raw int addresses or None (null); scalar parameters take Python or numpy numbers, converted to
    the declared C type; struct parameters (e.g. a ``__grid_constant__ CUtensorMap``) take bytes of
    the struct's size, a ctypes structure or a ``cuda.bindings.driver.CUtensorMap``.
    """

    def __init__(self, module: Module, name: str, params: tuple[Param, ...]):
        self.module = module
        self.name = name
        self.params = params
        self._handle: Any = None
        self._smem_limit: dict[int, int] = {}
        self._occupancy: dict[tuple[Any, ...], int] = {}
        self._fixed: dict[tuple[Any, ...], Any] = {}                    # launchers of one configuration each

    @property
    def signature(self) -> str:
        """The parameter list as the launcher reads it, e.g. ``'add(float* out, int n)'``."""
        return f"{self.name}({', '.join(p.describe() for p in self.params)})"

    @property
    def resources(self) -> ResourceUsage | None:
        """ptxas's report for this kernel (registers, static smem, spills), or None if it made none."""
        return self.module.resources.get(self.name)

    @property
    def handle(self) -> Any:
        """The loaded cuda.core Kernel (loads the module onto the GPU on first use)."""
        if self._handle is None:
            from tilecraft.runtime.device import init_driver

            try:
                init_driver()  # loading a library needs cuInit, which nothing may have called yet
                self._handle = self.module._load().get_kernel(self.name)
            except Exception as e:
                where = f"{self.module.name} ({self.module.arch})"
                raise RuntimeError(f"cannot load kernel {self.name!r} from {where}: {e}") from e
        return self._handle

    @property
    def attributes(self) -> Any:
        """The driver's attributes of the loaded kernel (``num_regs``, ``max_threads_per_block``, ...), from cuda.core."""
        return self.handle.attributes

    def __call__(self, *args: Any, **launch: Any) -> None:
        """Launch the kernel; see the class docstring for arguments and launch settings."""
        self.launch(*args, **launch)

    def launch(self, *args: Any, **launch: Any) -> None:
        """Launch the kernel. The first call builds the signature-specific launcher, which replaces this method."""
        fast = _build_launcher(self)
        self.launch = fast  # type: ignore[method-assign]
        fast(*args, **launch)

    def launcher(self, grid: Any, block: Any, smem: int = 0, cluster: Any = None, pdl: bool = False,
                 cooperative: bool = False) -> Any:
        """The launch function of this kernel for one configuration, resolved once: ``f(*args, stream=None,
        sync=False)`` launches as ``self(*args, grid=grid, block=block, ...)`` does, without reading the
        configuration at each call (for launches bound to one configuration, e.g. tilecraft.dsl's ``bind``)."""
        key = (grid, block, smem, cluster, pdl, cooperative)
        f = self._fixed.get(key)
        if f is None:
            f = self._fixed[key] = _build_launcher(self, key)
        return f

    def max_active_clusters(self, block: Any, smem: int, cluster: Any, device: int | None = None) -> int:
        """How many clusters of `cluster` blocks (of `block` threads and `smem` dynamic bytes) the GPU can
        hold at once (``cuOccupancyMaxActiveClusters``): the grid of a persistent kernel launched in
        clusters, since GPCs with an odd number of free SMs cannot place a whole cluster everywhere."""
        from tilecraft.runtime.device import check

        c = _dim3(cluster, "cluster")
        L, cfg = self._ready(c, block, smem, c, _device_or_current(device))
        return int(check(L.driver.cuOccupancyMaxActiveClusters(L.fn, cfg.ex), "cuOccupancyMaxActiveClusters"))

    def max_active_blocks(self, block: Any, smem: int, device: int | None = None) -> int:
        """How many blocks of `block` threads and `smem` dynamic bytes one SM holds at once
        (``cuOccupancyMaxActiveBlocksPerMultiprocessor``: registers, static and dynamic shared memory and
        the driver's per-block reservation, on the device at hand); cached per (block, smem, device)."""
        from tilecraft.runtime.device import check

        dev = _device_or_current(device)
        key = (_dim3(block, "block"), smem, dev)
        if key not in self._occupancy:
            L, cfg = self._ready(1, block, smem, None, dev)
            b = cfg.block
            self._occupancy[key] = int(check(L.driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                L.fn, b[0] * b[1] * b[2], smem), "cuOccupancyMaxActiveBlocksPerMultiprocessor"))
        return self._occupancy[key]

    def smem_for_occupancy(self, block: Any, smem: int, ctas_per_sm: int, device: int | None = None) -> int:
        """The least dynamic shared memory, at least `smem` bytes, with which at most `ctas_per_sm` blocks of
        `block` threads fit one SM (``max_active_blocks``): a launch asks for more shared memory than it
        uses to cap its occupancy, e.g. so that the CTAs of a programmatic dependent launch, placed while the
        previous kernel still runs, spread over the SMs instead of filling the ones it leaves free."""
        from tilecraft.runtime.device import device_info

        if not isinstance(ctas_per_sm, int) or isinstance(ctas_per_sm, bool) or ctas_per_sm < 1:
            raise ValueError(f"ctas_per_sm must be a positive int, got {ctas_per_sm!r}")
        dev = _device_or_current(device)
        if self.max_active_blocks(block, smem, dev) <= ctas_per_sm:
            return smem
        static = self.resources.smem_bytes if self.resources is not None else 0
        lo, hi = smem, device_info(dev).max_shared_memory_per_block_optin - static   # hi: one block per SM
        while hi - lo > 128:                                                  # occupancy falls as smem grows
            mid = (lo + hi) // 2 // 128 * 128
            lo, hi = (lo, mid) if self.max_active_blocks(block, mid, dev) <= ctas_per_sm else (mid, hi)
        return hi

    def _ready(self, grid: Any, block: Any, smem: int, cluster: Any, dev: int) -> tuple[_Launcher, _Config]:
        """A launcher and the normalized configuration, with device `dev` made able to run it (the
        occupancy queries' common start)."""
        L = _Launcher(self)
        cfg = L.config(grid, block, smem, cluster)
        L.ready(cfg, dev)
        return L, cfg

    def __repr__(self) -> str:
        return f"<tilecraft Kernel {self.signature} {self.module.arch}>"


class _Launcher:
    """Everything the generated launch function needs besides its arguments, prepared once per kernel."""

    def __init__(self, kernel: Kernel):
        from cuda.bindings import driver

        self.kernel = kernel
        self.driver = driver
        handle = kernel.handle
        self.cu_kernel = handle.handle
        self.fn = driver.CUfunction(int(self.cu_kernel))
        self.params = _reconcile(kernel, handle)
        self.configs: dict[tuple[Any, ...], _Config] = {}
        self.lock = threading.Lock()
        self.torch = _torch_if_cuda()
        res = kernel.resources
        self.static_smem = res.smem_bytes if res is not None else 0

        fmt, offsets, size = _layout(self.params)
        self.struct = struct.Struct(fmt)
        self.buffer = ctypes.create_string_buffer(max(size, 1))
        base = ctypes.addressof(self.buffer)
        self.pointers = (ctypes.c_void_p * max(len(self.params), 1))(*[base + o for o in offsets])
        self.params_address = ctypes.addressof(self.pointers) if self.params else 0

    # -- slow paths, called from the generated function only when the fast checks fail ---------

    def config(self, grid: Any, block: Any, smem: Any, cluster: Any, pdl: Any = False,
               cooperative: Any = False) -> _Config:
        g, b = _dim3(grid, "grid"), _dim3(block, "block")
        c = _dim3(cluster, "cluster") if cluster is not None else None
        if not isinstance(smem, int) or isinstance(smem, bool) or smem < 0:
            raise ValueError(f"smem must be a non-negative int (bytes of dynamic shared memory), got {smem!r}")
        if b[0] * b[1] * b[2] > 1024:
            raise ValueError(f"kernel {self.kernel.name!r}: block {b} has {b[0] * b[1] * b[2]} threads, more than 1024")
        if not isinstance(pdl, bool):
            raise TypeError(f"pdl must be True or False, got {pdl!r}")
        if not isinstance(cooperative, bool):
            raise TypeError(f"cooperative must be True or False, got {cooperative!r}")
        cfg = _Config(g, b, c, smem, g + b, pdl=pdl, cooperative=cooperative)
        if c is not None and any(gd % cd for gd, cd in zip(g, c)):
            raise ValueError(f"kernel {self.kernel.name!r}: grid {g} (in blocks) is not a multiple of cluster {c}")
        if c is not None or pdl or cooperative:
            cfg.ex = self._ex_config(cfg)
        self.configs[(grid, block, smem, cluster, pdl, cooperative)] = cfg
        return cfg

    def _ex_config(self, cfg: _Config) -> Any:
        """The driver's CUlaunchConfig of a cluster, programmatic dependent and/or cooperative launch."""
        d = self.driver
        attrs = []
        if cfg.cluster is not None:
            attr = d.CUlaunchAttribute()
            attr.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cfg.cluster
            attrs.append(attr)
        if cfg.pdl:
            attr = d.CUlaunchAttribute()
            attr.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            attr.value.programmaticStreamSerializationAllowed = 1
            attrs.append(attr)
        if cfg.cooperative:
            attr = d.CUlaunchAttribute()
            attr.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
            attr.value.cooperative = 1
            attrs.append(attr)
        ex = d.CUlaunchConfig()
        ex.gridDimX, ex.gridDimY, ex.gridDimZ = cfg.grid
        ex.blockDimX, ex.blockDimY, ex.blockDimZ = cfg.block
        ex.sharedMemBytes = cfg.smem
        ex.attrs = attrs
        ex.numAttrs = len(attrs)
        return ex

    def ready(self, cfg: _Config, dev: int) -> None:
        """Make device `dev` able to run `cfg`: a current context, and the kernel's smem/cluster attributes."""
        from tilecraft.runtime.device import check, device_info

        self.ensure_context(dev)
        d = self.driver
        A = d.CUfunction_attribute
        info = device_info(dev)
        need = cfg.smem + self.static_smem
        if need > info.max_shared_memory_per_block_optin:
            raise ValueError(
                f"kernel {self.kernel.name!r} [{cfg.describe()}]: needs {need} bytes of shared memory "
                f"({self.static_smem} static + {cfg.smem} dynamic), device {dev} ({info.name}) allows "
                f"{info.max_shared_memory_per_block_optin} per block"
            )
        if need > _DEFAULT_SMEM_LIMIT and cfg.smem > self.kernel._smem_limit.get(dev, 0):
            dev_handle = check(d.cuDeviceGet(dev), "cuDeviceGet")
            check(
                d.cuKernelSetAttribute(A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, cfg.smem, self.cu_kernel, dev_handle),
                f"raising the dynamic shared memory limit of {self.kernel.name!r} to {cfg.smem} bytes",
            )
            self.kernel._smem_limit[dev] = cfg.smem
        if cfg.pdl and info.compute_capability < (9, 0):
            cc = info.compute_capability
            raise ValueError(f"kernel {self.kernel.name!r}: a programmatic dependent launch (pdl=True) needs sm_90 "
                             f"or newer, device {dev} ({info.name}) is sm_{cc[0]}{cc[1]}")
        if cfg.cluster is not None:
            if not info.cluster_launch:
                raise ValueError(f"kernel {self.kernel.name!r}: device {dev} ({info.name}) does not support clusters")
            if cfg.cluster[0] * cfg.cluster[1] * cfg.cluster[2] > _PORTABLE_CLUSTER_SIZE:
                dev_handle = check(d.cuDeviceGet(dev), "cuDeviceGet")
                check(
                    d.cuKernelSetAttribute(A.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1, self.cu_kernel, dev_handle),
                    f"allowing a non-portable cluster size for {self.kernel.name!r}",
                )
        cfg.ready.add(dev)

    def ensure_context(self, dev: int) -> None:
        """Make `dev`'s primary context current on this thread if it is not (the one torch also uses)."""
        d = self.driver
        err, current = d.cuCtxGetDevice()
        if err != d.CUresult.CUDA_SUCCESS or int(current) != dev:
            from cuda.core import Device

            Device(dev).set_current()

    def pointer(self, i: int, value: Any, dev: int) -> int:
        """Device address for pointer parameter `i`, or a TypeError/ValueError saying what is wrong with `value`."""
        torch = self.torch
        if torch is not None and isinstance(value, torch.Tensor):
            if not value.is_cuda:
                raise ValueError(f"{self._where(i)}: tensor is on {value.device}, it must be on cuda:{dev}")
            if value.get_device() != dev:
                raise ValueError(
                    f"{self._where(i)}: tensor is on {value.device} but the kernel launches on cuda:{dev} "
                    "(the current device, or the device of the given stream)"
                )
            allowed = _allowed_dtypes(self.params[i], torch)
            if allowed is not None and value.dtype not in allowed:
                expected = " or ".join(map(str, allowed))
                raise TypeError(f"{self._where(i)}: tensor dtype is {value.dtype}, expected {expected}")
            return int(value.data_ptr())
        if value is None:
            return 0
        if isinstance(value, int) and not isinstance(value, bool):
            if not 0 <= value < 1 << 64:
                raise ValueError(f"{self._where(i)}: address {value:#x} is not a 64-bit address")
            return value
        iface = getattr(value, "__cuda_array_interface__", None)
        if iface is not None:
            return int(iface["data"][0])
        raise TypeError(
            f"{self._where(i)}: expected a CUDA torch tensor, an object with __cuda_array_interface__, "
            f"an int address or None, got {type(value).__name__}"
        )

    def _where(self, i: int) -> str:
        return f"kernel {self.kernel.name!r} argument {i} ({self.params[i].describe()})"

    def struct_bytes(self, i: int, value: Any) -> bytes:
        """The bytes of by-value struct parameter `i` (e.g. a CUtensorMap), checked against its size."""
        p = self.params[i]
        if type(value) is bytes and len(value) == p.size:  # e.g. a TmaMap's descriptor_bytes
            return value
        where = f"{self._where(i)[:-1]}, {p.size} bytes)"
        if hasattr(value, "getPtr"):  # cuda.bindings driver structs, e.g. CUtensorMap
            if type(value).__name__ == "CUtensorMap" and p.size != 128:
                raise TypeError(f"{where}: got a CUtensorMap (128 bytes)")
            return ctypes.string_at(int(value.getPtr()), p.size)
        try:
            data = bytes(memoryview(value))
        except TypeError:
            raise TypeError(
                f"{where}: expected bytes, a ctypes structure or a cuda.bindings CUtensorMap, got {type(value).__name__}"
            ) from None
        if len(data) != p.size:
            raise ValueError(f"{where}: got {len(data)} bytes")
        return data

    def explain_pack_error(self, values: tuple[Any, ...], error: Exception) -> Exception:
        """Turn an error from packing the scalars into one naming the argument, its C type and what was wrong."""
        for i, (p, v) in enumerate(zip(self.params, values)):
            if p.kind == "ptr" and isinstance(v, int) and not 0 <= v < 1 << 64:
                return ValueError(f"{self._where(i)}: address {v:#x} is not a 64-bit address")
            if p.kind != "scalar":
                continue
            try:
                if p.fmt == "bf16":
                    float(v)
                else:
                    struct.pack("<" + str(p.fmt), v)
            except (struct.error, TypeError, ValueError, OverflowError):
                where = self._where(i)
                if p.fmt in ("f", "d", "e", "bf16"):
                    if hasattr(v, "__float__"):
                        return OverflowError(f"{where}: {v!r} is out of range for a {8 * (p.size or 0)}-bit float")
                    return TypeError(f"{where}: expected a real number, got {type(v).__name__}")
                if isinstance(v, float) or not hasattr(v, "__index__"):
                    return TypeError(f"{where}: expected an integer, got {type(v).__name__} {v!r}")
                return OverflowError(f"{where}: {v} does not fit in a {8 * (p.size or 0)}-bit {p.ctype}")
        return TypeError(f"kernel {self.kernel.name!r}: cannot pack arguments: {error}")

    def fail(self, err: Any, cfg: _Config, dev: int, stream: int) -> None:
        """Raise LaunchError for a failed launch, after one retry if the thread merely had no current context."""
        d = self.driver
        if err == d.CUresult.CUDA_ERROR_INVALID_CONTEXT:
            self.ensure_context(dev)
            err = self.relaunch(cfg, stream)
            if err == d.CUresult.CUDA_SUCCESS:
                return
        from tilecraft.runtime.device import error_name

        hint = ""
        if err in (d.CUresult.CUDA_ERROR_INVALID_VALUE, d.CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES):
            try:
                limit = self.kernel.attributes.max_threads_per_block
            except Exception:
                limit = None
            threads = cfg.block[0] * cfg.block[1] * cfg.block[2]
            if limit is not None and threads > limit:
                hint = f"; block has {threads} threads, the kernel allows at most {limit} (__launch_bounds__/registers)"
        elif err == d.CUresult.CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
            hint = ("; a cooperative launch's blocks must all be resident at once, and this GPU (or its share of "
                    "the SMs) cannot hold them")
        elif err in (d.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS, d.CUresult.CUDA_ERROR_LAUNCH_FAILED):
            hint = "; this error is sticky and may come from an earlier asynchronous kernel fault"
        raise LaunchError(
            f"launch failed: {error_name(err)}{hint}",
            kernel=self.kernel.name,
            config=cfg.describe(stream),
            code=getattr(err, "name", str(err)),
        )

    def relaunch(self, cfg: _Config, stream: int) -> Any:
        d = self.driver
        if cfg.ex is None:
            (err,) = d.cuLaunchKernel(self.fn, *cfg.dims, cfg.smem, stream, self.params_address, 0)
        else:
            cfg.ex.hStream = stream
            (err,) = d.cuLaunchKernelEx(cfg.ex, self.fn, self.params_address, 0)
        return err

    def synchronize(self, cfg: _Config, stream: int) -> None:
        """Wait for the stream; a fault in the kernel raises LaunchError naming it and its configuration."""
        from tilecraft.runtime.device import error_name

        d = self.driver
        (err,) = d.cuStreamSynchronize(stream)
        if err != d.CUresult.CUDA_SUCCESS:
            raise LaunchError(
                f"kernel faulted while running: {error_name(err)}",
                kernel=self.kernel.name,
                config=cfg.describe(stream),
                code=getattr(err, "name", str(err)),
            )

    def stream_of(self, stream: Any) -> tuple[int, int]:
        """(device, raw handle) of a stream given as a torch stream, a cuda.core Stream or an int handle."""
        from tilecraft.runtime.device import current_device

        if isinstance(stream, int) and not isinstance(stream, bool):
            return current_device(), stream
        handle = getattr(stream, "cuda_stream", None)  # torch.cuda.Stream / ExternalStream
        if handle is not None:
            return int(stream.device_index), int(handle)
        proto = getattr(stream, "__cuda_stream__", None)  # cuda.core Stream and other protocol speakers
        if proto is not None:
            dev = getattr(getattr(stream, "device", None), "device_id", None)
            return (int(dev) if dev is not None else current_device()), int(proto()[1])
        raise TypeError(
            f"kernel {self.kernel.name!r}: stream must be a torch/cuda.core stream or an int handle, "
            f"got {type(stream).__name__}"
        )


def _device_or_current(device: int | None) -> int:
    """`device`, or torch's current CUDA device (0 without torch or CUDA)."""
    if device is not None:
        return device
    torch = _torch_if_cuda()
    return torch.cuda.current_device() if torch is not None else 0


def _torch_if_cuda() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _allowed_dtypes(p: Param, torch: Any) -> tuple[Any, ...] | None:
    pointee = _pointee_format(p)
    names = _POINTEE_DTYPES.get(pointee) if pointee is not None else None
    if names is None:
        return None
    return tuple(getattr(torch, n) for n in names if hasattr(torch, n))


def _pointee_format(p: Param) -> str | None:
    from tilecraft.runtime.signature import param_from_ctype

    base = p.ctype.replace("*", " ").replace("[", " ").replace("]", " ")
    if p.ctype.count("*") + p.ctype.count("[") != 1:
        return None  # pointers to pointers carry addresses, not data of a dtype
    try:
        q = param_from_ctype(base)
    except ValueError:
        return None
    # Plain `char`/`unsigned char` pointers are byte buffers by convention: any dtype goes.
    if q.kind != "scalar" or q.ctype in ("char", "unsigned char", "signed char"):
        return None
    return q.fmt


def _reconcile(kernel: Kernel, handle: Any) -> tuple[Param, ...]:
    """Check the parsed parameter list against the driver's (count and sizes) and fill unknown struct sizes."""
    from cuda.bindings import driver

    params = list(kernel.params)
    where = f"kernel {kernel.name!r} declared as {kernel.signature}"
    try:
        count = int(handle.num_arguments)
    except Exception:  # driver without cuKernelGetParamInfo (before CUDA 12.4): trust the parse
        count = None
    if count is not None:
        if count != len(params):
            raise TypeError(f"{where}: the compiled kernel takes {count} parameters, not {len(params)}; pass params=[...]")
        for i, p in enumerate(params):
            err, _offset, size = driver.cuKernelGetParamInfo(handle.handle, i)
            if err != driver.CUresult.CUDA_SUCCESS:
                break
            if p.size is None and p.kind == "struct":
                params[i] = Param(p.name, p.ctype, p.kind, None, int(size), p.align)
            elif p.size != size:
                raise TypeError(
                    f"{where}: parameter {i} ({p.describe()}) is {size} bytes in the compiled kernel, "
                    f"but its type was read as {p.size} bytes; pass params=[...]"
                )
    for i, p in enumerate(params):
        if p.size is None:
            raise TypeError(
                f"{where}: size of by-value struct parameter {i} ({p.describe()}) is unknown; "
                "declare it with params=[...]"
            )
    return tuple(params)


def _layout(params: tuple[Param, ...]) -> tuple[str, list[int], int]:
    """struct format, per-parameter offsets, total size. A by-value struct is an ``Ns`` field packed from its bytes
    (a ctypes buffer's slice assignment copies byte by byte: about 7 µs per 128-byte TMA descriptor on the H100's
    host, where the Hopper GEMM's launcher took 33.5 µs with its three that way and takes 11 now)."""
    fmt = ["<"]
    offsets: list[int] = []
    pos = 0
    for p in params:
        assert p.size is not None
        align = max(p.align, 1)
        pad = -pos % align
        if pad:
            fmt.append(f"{pad}x")
            pos += pad
        offsets.append(pos)
        if p.kind == "struct":
            fmt.append(f"{p.size}s")
        else:
            fmt.append("H" if p.fmt == "bf16" else p.fmt)  # type: ignore[arg-type]
        pos += p.size
    return "".join(fmt), offsets, pos


def _bf16_bits(x: Any) -> int:
    """Round a number to bfloat16 (nearest even) and return its 16 bits."""
    (u,) = struct.unpack("<I", struct.pack("<f", float(x)))
    if (u & 0x7F800000) == 0x7F800000 and u & 0x7FFFFF:
        return 0x7FC0  # NaN
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def _arg_names(params: tuple[Param, ...]) -> list[str]:
    names: list[str] = []
    for i, p in enumerate(params):
        # Names starting with "_" are the launcher's own (its globals and locals all do), so a kernel
        # parameter can never shadow them.
        n = p.name if p.name.isidentifier() and not p.name.startswith("_") else f"arg{i}"
        if n in _RESERVED_NAMES or n in names or n.startswith("arg") and n != f"arg{i}":
            n = f"arg{i}"
        names.append(n)
    return names


def _build_launcher(kernel: Kernel, fixed: tuple[Any, ...] | None = None) -> Any:
    """Generate the launch function specialized to `kernel`'s signature (see module docstring); with `fixed` (grid,
    block, smem, cluster, pdl, cooperative), one for that configuration alone, which takes no launch settings but
    ``stream`` and ``sync``."""
    L = _Launcher(kernel)
    torch = L.torch
    names = _arg_names(L.params)
    blocking = os.environ.get("TILECRAFT_LAUNCH_BLOCKING", "") not in ("", "0")
    ns: dict[str, Any] = {
        "_L": L,
        "_configs": L.configs,
        "_lock": L.lock,
        "_pack": L.struct.pack_into,
        "_buf": L.buffer,
        "_fn": L.fn,
        "_params": L.params_address,
        "_launch": L.driver.cuLaunchKernel,
        "_launch_ex": L.driver.cuLaunchKernelEx,
        "_struct_error": struct.error,
        "_bf16": _bf16_bits,
        "_T": torch.Tensor if torch is not None else None,
    }
    if torch is not None:
        # torch's private getters skip the per-call lazy-init check of the public ones (~0.2 us);
        # initializing once here makes them safe. Public fallbacks keep other torch builds working.
        torch.cuda.init()
        ns["_current_device"] = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        ns["_current_stream"] = raw if raw is not None else (lambda d: torch.cuda.current_stream(d).cuda_stream)
    else:
        from tilecraft.runtime.device import current_device

        ns["_current_device"] = current_device
        ns["_current_stream"] = lambda d: 0  # no torch: the legacy default stream of the current context

    body: list[str] = []
    packed: list[str] = []
    for i, (p, n) in enumerate(zip(L.params, names)):
        if p.kind == "ptr":
            allowed = _allowed_dtypes(p, torch) if torch is not None else None
            dtype_check = ""
            if allowed is not None:
                ns[f"_dt{i}"] = frozenset(allowed)
                dtype_check = f" and {n}.dtype in _dt{i}"
            body.append(f"    if type({n}) is _T and {n}.get_device() == _dev{dtype_check}: _p{i} = {n}.data_ptr()")
            # Raw addresses skip the slow path; struct.pack range-checks them as 64-bit unsigned.
            body.append(f"    elif type({n}) is int: _p{i} = {n}")
            body.append(f"    else: _p{i} = _L.pointer({i}, {n}, _dev)")
            packed.append(f"_p{i}")
        elif p.kind == "scalar":
            packed.append(f"_bf16({n})" if p.fmt == "bf16" else n)
        else:
            body.append(f"    _s{i} = {n} if type({n}) is bytes and len({n}) == {p.size} else _L.struct_bytes({i}, {n})")
            packed.append(f"_s{i}")
    all_names = ", ".join(names)
    sig = f"{all_names}, /, " if names else ""
    if fixed is None:
        head = [f"def launch({sig}*, grid, block, smem=0, cluster=None, pdl=False, cooperative=False, stream=None, "
                f"sync={blocking}):",
                "    _cfg = _configs.get((grid, block, smem, cluster, pdl, cooperative))",
                "    if _cfg is None: _cfg = _L.config(grid, block, smem, cluster, pdl, cooperative)"]
    else:
        ns["_cfg0"] = L.config(*fixed)
        head = [f"def launch({sig}*, stream=None, sync={blocking}):", "    _cfg = _cfg0"]
    src = [
        *head,
        "    if stream is None:",
        "        _dev = _current_device()",
        "        _hs = _current_stream(_dev)",
        "    else:",
        "        _dev, _hs = _L.stream_of(stream)",
        "    if _dev not in _cfg.ready: _L.ready(_cfg, _dev)",
        *body,
        "    with _lock:",
        "        try:",
        f"            _pack(_buf, 0, {', '.join(packed)})" if packed else "            pass",
        "        except (_struct_error, TypeError, OverflowError) as _e:",
        f"            raise _L.explain_pack_error(({all_names}{',' if len(names) == 1 else ''}), _e) from None",
        "        if _cfg.ex is None:",
        "            _err, = _launch(_fn, *_cfg.dims, _cfg.smem, _hs, _params, 0)",
        "        else:",
        "            _cfg.ex.hStream = _hs",
        "            _err, = _launch_ex(_cfg.ex, _fn, _params, 0)",
        "        if _err: _L.fail(_err, _cfg, _dev, _hs)",
        "    if sync: _L.synchronize(_cfg, _hs)",
    ]
    code = "\n".join(src)
    exec(compile(code, f"<tilecraft launcher {kernel.name}>", "exec"), ns)
    fn = ns["launch"]
    fn.__qualname__ = fn.__name__ = kernel.name
    fn.__doc__ = (f"Launch {kernel.signature}. Keywords: grid, block, smem=0, cluster=None, pdl=False, "
                  "cooperative=False, stream=None, sync=False." if fixed is None else
                  f"Launch {kernel.signature} with grid, block, smem, cluster, pdl, cooperative = {fixed}. Keywords: "
                  "stream=None, sync=False.")
    fn._source = code  # for debugging: the generated launcher
    return fn
