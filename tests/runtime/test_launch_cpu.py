"""The launch path against a recording stand-in for the CUDA driver: packing, configs, errors.

No GPU needed: cuLaunchKernel/cuLaunchKernelEx are replaced by functions that read back the
parameter buffer through the pointer array the launcher passes, exactly as the driver would.
"""
from __future__ import annotations

import ctypes
import struct

import pytest

import tilecraft.runtime as rt
from tilecraft.runtime import device, launch

SRC = r"""
struct Pair { int a; float b; };
extern "C" __global__ void k(float* out, const float* x, float alpha, int n, double d, unsigned long long u,
                             __half h, __nv_bfloat16 bf, bool flag, short s) {}
extern "C" __global__ void tm(const __grid_constant__ CUtensorMap map, int* out) {}
extern "C" __global__ void pair(Pair p, const unsigned char* bytes) {}
extern "C" __global__ void noargs() {}
extern "C" __global__ void shadow(int L, int cfg, int dev, int hs, int err, int e) {}
"""
PRELUDE = (
    "struct __half { unsigned short x; }; struct __nv_bfloat16 { unsigned short x; };\n"
    "struct alignas(64) CUtensorMap { unsigned long long opaque[16]; };\n"
)
PARAM_SIZES = {"k": [8, 8, 4, 4, 8, 8, 2, 2, 1, 2], "tm": [128, 8], "pair": [8, 8], "noargs": [],
               "shadow": [4] * 6}


class FakeAttributes:
    max_threads_per_block = 128


class FakeHandle:
    def __init__(self, name):
        self.name = name
        self.handle = 0x1000 + len(name)
        self.num_arguments = len(PARAM_SIZES[name])
        self.attributes = FakeAttributes()


class Recorder:
    """Stands in for the driver calls the launcher makes; records each launch's decoded parameters."""

    def __init__(self, driver):
        self.d = driver
        self.launches = []
        self.attrs = []
        self.syncs = []
        self.next_error = []
        self.kernel = None

    def _params(self, address):
        sizes = PARAM_SIZES[self.kernel]
        out = []
        for i, size in enumerate(sizes):
            ptr = ctypes.c_void_p.from_address(address + 8 * i).value
            out.append(ctypes.string_at(ptr, size))
        return out

    def _result(self):
        return (self.next_error.pop(0) if self.next_error else self.d.CUresult.CUDA_SUCCESS,)

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        self.launches.append(dict(grid=(gx, gy, gz), block=(bx, by, bz), smem=smem, stream=stream,
                                  params=self._params(params), cluster=None))  # fmt: skip
        return self._result()

    def cuLaunchKernelEx(self, cfg, fn, params, extra):
        A = self.d.CUlaunchAttributeID
        attrs = {a.id: a.value for a in cfg.attrs[:cfg.numAttrs]}
        c = attrs.get(A.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        p = attrs.get(A.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
        co = attrs.get(A.CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
        self.launches.append(dict(grid=(cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ),
                                  block=(cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ), smem=cfg.sharedMemBytes,
                                  stream=int(cfg.hStream), params=self._params(params),
                                  cluster=None if c is None else (c.clusterDim.x, c.clusterDim.y, c.clusterDim.z),
                                  pdl=p is not None and p.programmaticStreamSerializationAllowed == 1,
                                  cooperative=co is not None and co.cooperative == 1))  # fmt: skip
        return self._result()

    def cuKernelGetParamInfo(self, handle, i):
        sizes = PARAM_SIZES[self.kernel]
        return (self.d.CUresult.CUDA_SUCCESS, sum(sizes[:i]), sizes[i])

    def cuKernelSetAttribute(self, attr, value, kernel, dev):
        self.attrs.append((attr.name, value))
        return (self.d.CUresult.CUDA_SUCCESS,)

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, fn, threads, smem):
        """An SM of 233472 bytes of shared memory (1024 reserved per block) and 2048 threads."""
        return (self.d.CUresult.CUDA_SUCCESS, min(2048 // threads, 233472 // (smem + 1024)))

    def cuStreamSynchronize(self, stream):
        self.syncs.append(stream)
        return self._result()

    def cuCtxGetDevice(self):
        return (self.d.CUresult.CUDA_SUCCESS, 0)

    def cuDeviceGet(self, i):
        return (self.d.CUresult.CUDA_SUCCESS, i)

    def cuGetErrorString(self, err):
        return (self.d.CUresult.CUDA_SUCCESS, b"explained")


INFO = device.DeviceInfo(0, "Fake H100", (9, 0), "sm_90a", 132, 49152, 232448, 233472, 50 * 2**20, 1024, 32, 80 * 2**30, True)


@pytest.fixture
def fake(monkeypatch, cache_dir):
    from cuda.bindings import driver

    rec = Recorder(driver)
    for name in ("cuLaunchKernel", "cuLaunchKernelEx", "cuKernelGetParamInfo", "cuKernelSetAttribute",
                 "cuOccupancyMaxActiveBlocksPerMultiprocessor", "cuStreamSynchronize", "cuCtxGetDevice", "cuDeviceGet", "cuGetErrorString"):  # fmt: skip
        monkeypatch.setattr(driver, name, getattr(rec, name))
    monkeypatch.setattr(device, "device_info", lambda index=None: INFO)
    monkeypatch.setattr(device, "current_device", lambda: 0)
    monkeypatch.setattr(launch, "_torch_if_cuda", lambda: None)
    mod = rt.compile(PRELUDE + SRC, arch="sm_90a")

    def get(name):
        rec.kernel = name
        k = mod.kernel(name)
        k._handle = FakeHandle(name)
        return k

    rec.get = get
    return rec


class CudaArray:
    def __init__(self, ptr):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (1,), "typestr": "<f4", "version": 3}


def test_scalars_are_packed_as_declared_c_types(fake):
    k = fake.get("k")
    k(0x7F0000001000, CudaArray(0x7F0000002000), 0.1, 7, 0.1, 2**64 - 1, 1.5, 1.0, True, -3, grid=4, block=128)
    (rec,) = fake.launches
    p = rec["params"]
    assert struct.unpack("<Q", p[0])[0] == 0x7F0000001000
    assert struct.unpack("<Q", p[1])[0] == 0x7F0000002000
    assert p[2] == struct.pack("<f", 0.1)  # a Python float for `float` is 4 bytes, not a double
    assert struct.unpack("<i", p[3])[0] == 7
    assert p[4] == struct.pack("<d", 0.1)
    assert struct.unpack("<Q", p[5])[0] == 2**64 - 1
    assert p[6] == struct.pack("<e", 1.5)
    assert p[7] == bytes([0x80, 0x3F])  # bfloat16(1.0) = 0x3F80
    assert p[8] == b"\x01" and struct.unpack("<h", p[9])[0] == -3
    assert rec["grid"] == (4, 1, 1) and rec["block"] == (128, 1, 1) and rec["smem"] == 0 and rec["stream"] == 0


def test_bf16_rounds_to_nearest_even():
    assert launch._bf16_bits(1.0) == 0x3F80
    assert launch._bf16_bits(-2.0) == 0xC000
    assert launch._bf16_bits(1.0 + 2**-8) == 0x3F80  # tie -> even
    assert launch._bf16_bits(1.0 + 3 * 2**-8) == 0x3F82  # tie -> even (up)
    assert launch._bf16_bits(float("nan")) == 0x7FC0
    assert launch._bf16_bits(float("inf")) == 0x7F80


def test_numpy_scalars_and_null_pointer(fake):
    np = pytest.importorskip("numpy")
    k = fake.get("k")
    k(None, 0, np.float32(2.5), np.int32(-1), np.float64(3.0), np.uint64(5), np.float16(2), 0.5, False, np.int16(9),
      grid=(2, 3), block=(32, 4))  # fmt: skip
    p = fake.launches[0]["params"]
    assert p[0] == bytes(8) and p[2] == struct.pack("<f", 2.5) and struct.unpack("<i", p[3])[0] == -1
    assert fake.launches[0]["grid"] == (2, 3, 1) and fake.launches[0]["block"] == (32, 4, 1)


def test_tensor_map_and_struct_by_value(fake):
    from cuda.bindings import driver

    tmap = driver.CUtensorMap()
    ctypes.memmove(tmap.getPtr(), bytes(range(128)), 128)
    fake.get("tm")(tmap, 0x1000, grid=1, block=1)
    fake.get("tm")(bytes(range(128, 256)), 0x1000, grid=1, block=1)
    assert fake.launches[0]["params"][0] == bytes(range(128))
    assert fake.launches[1]["params"][0] == bytes(range(128, 256))
    with pytest.raises(ValueError, match="got 64 bytes"):
        fake.get("tm")(bytes(64), 0x1000, grid=1, block=1)

    class Pair(ctypes.Structure):
        _fields_ = [("a", ctypes.c_int), ("b", ctypes.c_float)]

    fake.kernel = "pair"
    fake.get("pair")(Pair(3, 0.5), 0x2000, grid=1, block=1)
    assert fake.launches[2]["params"][0] == struct.pack("<if", 3, 0.5)
    with pytest.raises(TypeError, match="expected bytes"):
        fake.get("pair")(3.5, 0x2000, grid=1, block=1)


def test_argument_errors_name_the_argument(fake):
    k = fake.get("k")
    good = [0x1000, 0x2000, 1.0, 4, 1.0, 1, 1.0, 1.0, True, 1]

    def call(i, v):
        args = list(good)
        args[i] = v
        k(*args, grid=1, block=32)

    with pytest.raises(TypeError, match=r"argument 3 \(int n\): expected an integer, got float"):
        call(3, 2.5)
    with pytest.raises(OverflowError, match=r"argument 3 \(int n\): 4294967296 does not fit in a 32-bit int"):
        call(3, 2**32)
    with pytest.raises(TypeError, match=r"argument 2 \(float alpha\): expected a real number, got str"):
        call(2, "x")
    with pytest.raises(TypeError, match=r"argument 0 \(float\* out\): expected a CUDA torch tensor"):
        call(0, "not a pointer")
    with pytest.raises(ValueError, match="64-bit address"):
        call(0, -1)
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        k(*good[:-1], grid=1, block=32)
    assert fake.launches == []


def test_cpu_tensor_is_refused_with_its_device(fake, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(launch, "_torch_if_cuda", lambda: torch)
    monkeypatch.setattr(torch.cuda, "init", lambda: None)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.delattr(torch._C, "_cuda_getDevice", raising=False)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda d: 0xABC, raising=False)
    k = fake.get("k")
    x = torch.zeros(4)
    with pytest.raises(ValueError, match=r"argument 1 \(const float\* x\): tensor is on cpu, it must be on cuda:0"):
        k(0x1000, x, 1.0, 4, 1.0, 1, 1.0, 1.0, True, 1, grid=1, block=32)
    k(0x1000, 0x2000, 1.0, 4, 1.0, 1, 1.0, 1.0, True, 1, grid=1, block=32)
    assert fake.launches[0]["stream"] == 0xABC  # torch's current stream by default


def test_dtype_checks_follow_the_pointee():
    torch = pytest.importorskip("torch")
    from tilecraft.runtime.signature import param_from_ctype

    def allowed(ctype):
        return launch._allowed_dtypes(param_from_ctype(ctype, "p"), torch)

    assert allowed("const float*") == (torch.float32,)
    assert allowed("__half*") == (torch.float16,)
    assert allowed("__nv_bfloat16*") == (torch.bfloat16,)
    assert torch.int32 in allowed("unsigned int*") and torch.float32 not in allowed("int*")
    assert allowed("void*") is None and allowed("char*") is None and allowed("float**") is None
    assert allowed("const MyStruct*") is None


def test_configs_smem_and_clusters(fake):
    k = fake.get("noargs")
    k(grid=(8, 2), block=128, smem=100 * 1024, cluster=(2, 1), stream=0x55)
    rec = fake.launches[0]
    assert rec["cluster"] == (2, 1, 1) and rec["grid"] == (8, 2, 1) and rec["smem"] == 100 * 1024
    assert rec["stream"] == 0x55
    assert fake.attrs == [("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 100 * 1024)]
    k(grid=(8, 2), block=128, smem=100 * 1024, cluster=(2, 1), stream=0x55)
    assert len(fake.attrs) == 1  # raised once per device, not per launch
    k(grid=16, block=128, cluster=16)
    assert fake.attrs[-1] == ("CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)
    with pytest.raises(ValueError, match=r"grid \(9, 1, 1\) \(in blocks\) is not a multiple of cluster \(2, 1, 1\)"):
        k(grid=9, block=128, cluster=2)
    with pytest.raises(ValueError, match="allows 232448 per block"):
        k(grid=1, block=128, smem=230 * 1024)
    with pytest.raises(ValueError, match="more than 1024"):
        k(grid=1, block=(32, 64))
    with pytest.raises(ValueError, match="grid must be a positive int"):
        k(grid=0, block=32)


def test_launcher_of_one_configuration(fake):
    """Kernel.launcher(grid, block, ...) launches as the call with those settings does (the bound launches' path):
    the same parameters and configuration, made once per configuration; a bad configuration raises at once."""
    k = fake.get("tm")
    tmap = bytes(range(128))
    k(tmap, 0x1000, grid=(8, 2), block=128, smem=64 * 1024, cluster=(2, 1), stream=0x55)
    f = k.launcher((8, 2), 128, 64 * 1024, (2, 1))
    assert k.launcher((8, 2), 128, 64 * 1024, (2, 1)) is f and k.launcher((8, 2), 128, 64 * 1024) is not f
    f(tmap, 0x1000, stream=0x55)
    assert fake.launches[0] == fake.launches[1] and fake.launches[1]["cluster"] == (2, 1, 1)
    k.launcher(4, 32, cooperative=True)(bytes(128), 0x2000)
    assert fake.launches[2]["cooperative"] and fake.launches[2]["params"][0] == bytes(128)
    with pytest.raises(TypeError, match="grid"):
        f(tmap, 0x1000, grid=4)                                           # the configuration is the launcher's
    with pytest.raises(ValueError, match="not a multiple of cluster"):
        k.launcher(9, 128, 0, 2)


def test_programmatic_dependent_launch(fake, monkeypatch):
    """pdl=True goes through cuLaunchKernelEx with the programmatic-stream-serialization attribute (alone or
    beside a cluster's); launches without it keep cuLaunchKernel; a GPU before sm_90 is refused."""
    k = fake.get("noargs")
    k(grid=4, block=32)
    k(grid=4, block=32, pdl=True, stream=0x77)
    k(grid=(8, 2), block=128, cluster=(2, 1), pdl=True)
    k(grid=(8, 2), block=128, cluster=(2, 1))
    plain, pdl, both, cluster = fake.launches
    assert "pdl" not in plain and plain["cluster"] is None
    assert pdl["pdl"] and pdl["cluster"] is None and pdl["grid"] == (4, 1, 1) and pdl["stream"] == 0x77
    assert both["pdl"] and both["cluster"] == (2, 1, 1)
    assert not cluster["pdl"] and cluster["cluster"] == (2, 1, 1)
    with pytest.raises(TypeError, match="pdl must be True or False"):
        k(grid=4, block=32, pdl="yes")
    ampere = device.DeviceInfo(0, "Fake A100", (8, 0), "sm_80", 108, 49152, 166912, 167936, 40 * 2**20, 1024, 32,
                               40 * 2**30, False)
    monkeypatch.setattr(device, "device_info", lambda index=None: ampere)
    k2 = fake.get("noargs")
    with pytest.raises(ValueError, match="pdl=True.*needs sm_90 or newer.*sm_80"):
        k2(grid=5, block=32, pdl=True)  # a new configuration: ready() checks the device again


def test_cooperative_launch(fake):
    """cooperative=True goes through cuLaunchKernelEx with the cooperative attribute (alone or beside a
    cluster's and pdl's); the configuration says so in errors; a grid the GPU cannot hold at once is refused
    by the driver with an error that says why."""
    k = fake.get("noargs")
    k(grid=4, block=32)
    k(grid=132, block=384, cooperative=True, stream=0x55)
    k(grid=(8, 2), block=128, cluster=(2, 1), cooperative=True, pdl=True)
    plain, coop, both = fake.launches
    assert "cooperative" not in plain
    assert coop["cooperative"] and not coop["pdl"] and coop["cluster"] is None and coop["grid"] == (132, 1, 1)
    assert coop["stream"] == 0x55
    assert both["cooperative"] and both["pdl"] and both["cluster"] == (2, 1, 1)
    with pytest.raises(TypeError, match="cooperative must be True or False"):
        k(grid=4, block=32, cooperative=1)
    fake.next_error.append(fake.d.CUresult.CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)
    with pytest.raises(rt.LaunchError, match="must all be resident at once") as e:
        k(grid=264, block=384, cooperative=True)
    assert "cooperative" in str(e.value) and "grid=(264, 1, 1)" in str(e.value)


def test_smem_for_occupancy_caps_the_blocks_per_sm(fake):
    """The least dynamic smem (to 128 bytes) at which at most n blocks share an SM; the kernel's own smem
    when it already fits no more; the whole SM's for one block."""
    k = fake.get("noargs")
    assert k.max_active_blocks(128, 0) == 16
    for n, own in ((4, 0), (3, 4096), (7, 20000), (1, 0)):
        smem = k.smem_for_occupancy(128, own, n)
        assert smem >= own and k.max_active_blocks(128, smem) <= n, (n, own, smem)
        assert k.max_active_blocks(128, smem - 128) > n, (n, own, smem)
    assert k.smem_for_occupancy(128, 100_000, 4) == 100_000                 # 2 fit already
    assert k.smem_for_occupancy(128, 0, 16) == 0
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match="ctas_per_sm must be a positive int"):
            k.smem_for_occupancy(128, 0, bad)


def test_launch_failure_names_kernel_and_config(fake):
    from cuda.bindings import driver

    k = fake.get("noargs")
    fake.next_error = [driver.CUresult.CUDA_ERROR_INVALID_VALUE]
    with pytest.raises(rt.LaunchError) as ei:
        k(grid=3, block=256, stream=0x10)
    e = ei.value
    assert e.kernel == "noargs" and e.code == "CUDA_ERROR_INVALID_VALUE"
    assert "grid=(3, 1, 1) block=(256, 1, 1) smem=0 stream=0x10" in str(e)
    assert "at most 128" in str(e)  # the hint from the kernel's max threads per block


def test_sync_reports_a_fault_with_the_kernel(fake):
    from cuda.bindings import driver

    k = fake.get("noargs")
    fake.next_error = [driver.CUresult.CUDA_SUCCESS, driver.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS]
    with pytest.raises(rt.LaunchError, match=r"'noargs' \[grid=\(1, 1, 1\).*faulted while running: CUDA_ERROR_ILLEGAL"):
        k(grid=1, block=32, stream=0x10, sync=True)
    assert fake.syncs == [0x10]


def test_missing_context_is_made_current_and_retried(fake, monkeypatch):
    from cuda.bindings import driver

    made_current = []
    monkeypatch.setattr(launch._Launcher, "ensure_context", lambda self, dev: made_current.append(dev))
    k = fake.get("noargs")
    fake.next_error = [driver.CUresult.CUDA_ERROR_INVALID_CONTEXT]
    k(grid=1, block=32)
    assert len(fake.launches) == 2 and made_current == [0, 0]


def test_declared_params_must_match_the_driver(fake):
    k = fake.get("k")
    mod = k.module
    bad = mod.kernel("k", params=["float*", "float*", "double", "int", "double", "long", "short", "short", "bool", "short"])
    bad._handle = FakeHandle("k")
    with pytest.raises(TypeError, match=r"parameter 2 \(double arg2\) is 4 bytes in the compiled kernel"):
        bad(0, 0, 1.0, 1, 1.0, 1, 1, 1, True, 1, grid=1, block=1)


def test_parameter_names_cannot_shadow_the_launchers_own(fake):
    # A kernel parameter named like the launcher's internals (a batch count "L", say) once replaced
    # the launcher object inside the generated function.
    k = fake.get("shadow")
    k(1, 2, 3, 4, 5, 6, grid=1, block=32)
    assert [int.from_bytes(b, "little") for b in fake.launches[-1]["params"]] == [1, 2, 3, 4, 5, 6]
