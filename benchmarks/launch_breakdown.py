"""Where the host time of one launch goes: each piece of the launcher timed alone (GPU machine)."""
import ctypes
import statistics
import time

import torch

import tilecraft.runtime as rt


def t_us(fn, n=20000):
    ts = []
    clock = time.perf_counter_ns
    for i in range(n):
        t0 = clock()
        fn()
        ts.append(clock() - t0)
        if i % 200 == 199:
            torch.cuda.synchronize()
    return statistics.median(ts) / 1e3


k = rt.compile('extern "C" __global__ void empty(float* a, float* b, float* c, float* d) {}').kernel("empty")
a, b, c, d = [torch.empty(1024, device="cuda") for _ in range(4)]
k.launch(a, b, c, d, grid=1, block=32)
torch.cuda.synchronize()
launch = k.launch
L = launch.__globals__["_L"]              # the generated launcher's _Launcher
dev = torch.cuda.current_device()
hs = torch.cuda.current_stream().cuda_stream
lib = ctypes.CDLL("libcuda.so.1")
raw = lib.cuLaunchKernel  # no argtypes: every argument pre-converted
fn_p, par_p = ctypes.c_void_p(int(L.cu_kernel)), ctypes.c_void_p(L.params_address)
hs_p = ctypes.c_void_p(hs)
one, u32 = ctypes.c_uint(1), ctypes.c_uint(32)
zero = ctypes.c_uint(0)
f32 = torch.float32
rows = {
    "full launcher (4 tensors)": lambda: launch(a, b, c, d, grid=1, block=32),
    "full launcher (4 raw ints)": lambda: launch(a.data_ptr(), b.data_ptr(), c.data_ptr(), d.data_ptr(), grid=1, block=32),
    "ctypes preconverted call": lambda: raw(fn_p, one, one, one, u32, one, one, zero, hs_p, par_p, None),
    "cuda.bindings cuLaunchKernel": lambda: L.driver.cuLaunchKernel(L.fn, 1, 1, 1, 32, 1, 1, 0, hs, L.params_address, 0),
    "torch current device+stream": lambda: torch._C._cuda_getCurrentRawStream(torch._C._cuda_getDevice()),
    "4x get_device+dtype+data_ptr": lambda: (a.get_device() == dev and a.dtype is f32 and a.data_ptr(),
                                            b.get_device() == dev and b.dtype is f32 and b.data_ptr(),
                                            c.get_device() == dev and c.dtype is f32 and c.data_ptr(),
                                            d.get_device() == dev and d.dtype is f32 and d.data_ptr()),
    "struct pack 4 pointers": lambda: L.struct.pack_into(L.buffer, 0, 1, 2, 3, 4),
    "torch empty kernel (a.zero_())": lambda: a.zero_(),
}
for name, fn in rows.items():
    print(f"{name:34s} {t_us(fn):7.2f} us")
