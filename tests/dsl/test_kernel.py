"""Tracing kernels into C++: signatures, names, comments, control flow, memory, errors. CPU only."""
from __future__ import annotations

import re

import pytest
import torch

import tilecraft as tc
from tilecraft import _, dsl
from tilecraft.dsl import Constexpr, TraceError, blockIdx, threadIdx


@dsl.kernel
def axpy(x, y, a, n):
    i = blockIdx.x * 256 + threadIdx.x                                  # global index
    with dsl.if_(i < n):
        y[i] = a * x[i] + y[i]


def test_signature_names_and_comments():
    x, y = torch.zeros(10), torch.zeros(10)
    src = axpy.source(x, y, 2.0, 10)
    assert 'extern "C" __global__ void axpy(' in src
    # read-only pointers are const; every pointer is __restrict__; scalars keep their Python names
    assert "const float* __restrict__ x," in src and "    float* __restrict__ y," in src
    assert "float a," in src and "int n)" in src
    # the unused shape/stride parameters of x and y do not appear; the unit stride is static
    assert "x_shape_0" not in src and "stride" not in src
    # a local integer expression is declared under its Python name, with the line's comment
    assert "const int i = int(blockIdx.x) * 256 + int(threadIdx.x);  // global index" in src
    assert "if (i < n) {" in src
    # one statement per operation: the read of x is a named temporary of the line
    assert re.search(r"const float v\d* = x\[i\];", src)



def _scaled_index(n):
    j = blockIdx.x * 128 + threadIdx.x                                  # the helper's own line
    return dsl.where(j < n, j, n - 1)


@dsl.inline
def _scaled_index_inline(n):
    j = blockIdx.x * 128 + threadIdx.x                                  # the helper's own line
    return dsl.where(j < n, j, n - 1)


@dsl.kernel
def uses_helper(y, n, inline: Constexpr):
    k = _scaled_index_inline(n) if inline else _scaled_index(n)
    y[k] = 1.0
    y[k + 1] = 2.0


def test_inline_helpers_name_their_locals():
    y = torch.zeros(10)
    plain = uses_helper.source(y, 10, False)
    inlined = uses_helper.source(y, 10, True)
    # a plain helper's local is an expression: it is rendered where it is used
    assert "const int j" not in plain and plain.count("int(blockIdx.x) * 128") >= 1
    # an @inline helper's local is declared once, under its name, with the helper's comment
    assert "const int j = int(blockIdx.x) * 128 + int(threadIdx.x);  // the helper's own line" in inlined
    assert inlined.count("int(blockIdx.x) * 128") == 1


@dsl.kernel
def loops(x, n, unroll: Constexpr):
    acc = dsl.make_rmem_tensor(dsl.float32, 4)                            # (4)
    dsl.clear(acc)
    for k in dsl.range(n, unroll=unroll):
        for j in range(4):                                                # unrolled by Python
            acc[j] = acc[j] + x[k * 4 + j]
    with dsl.if_(threadIdx.x < 1):
        x[0] = acc[0]
    with dsl.else_():
        x[1] = acc[1]


@pytest.mark.parametrize("unroll,pragma", [(None, None), (1, "#pragma unroll 1"), (4, "#pragma unroll 4"),
                                           (True, "#pragma unroll")])
def test_runtime_loop_and_branches(unroll, pragma):
    src = loops.source(torch.zeros(8), 7, unroll)
    assert "for (int k = 0; k < n; ++k) {" in src
    if pragma:
        assert pragma + "\n" in src
    else:
        assert "#pragma" not in src
    assert "alignas(16) float acc[4];  // (4)" in src
    assert src.count("acc[0] = ") == 2 and src.count("acc[3] = ") == 2  # clear + loop body
    assert "if (int(threadIdx.x) < 1) {" in src and "} else {" in src
    # a memory read is a named temporary (it runs where it is written); a register read is not
    assert re.search(r"const float (v\d+) = x\[k \* 4 \+ 1\];\n *acc\[1\] = acc\[1\] \+ \1;", src)


@dsl.kernel
def python_if(x, n):
    if threadIdx.x < n:
        x[0] = 1.0


def test_python_if_on_a_runtime_value_names_the_line():
    with pytest.raises(TraceError, match=r"(?s)test_kernel.py:\d+: Python `if`.*`int\(threadIdx.x\) < n`.*"
                                         r"if threadIdx.x < n:.*tc.if_"):
        python_if.source(torch.zeros(2), 5)


@dsl.kernel
def python_range(x, n):
    for i in range(n):
        x[i] = 0.0


def test_python_range_over_a_runtime_value_says_use_tc_range():
    with pytest.raises(TraceError, match=r"(?s)test_kernel.py:\d+:.*for i in range\(n\):.*tc.range"):
        python_range.source(torch.zeros(2), 5)


@dsl.kernel
def bad_else(x):
    x[0] = 1.0
    with dsl.else_():
        x[1] = 1.0


@dsl.kernel
def loop_break(x, n):
    for k in dsl.range(n):
        x[k] = 0.0
        break


@dsl.kernel
def count_until_negative(x, out, n):
    c = dsl.declare(0, "c", const=False)
    for k in dsl.range(n):
        with dsl.if_(x[k] < 0.0):
            dsl.break_()
        dsl.assign(c, c + 1)
    out[0] = c


@dsl.kernel
def break_outside_a_loop(x):
    with dsl.if_(x[0] < 0.0):
        dsl.break_()


def test_break_leaves_the_runtime_loop():
    """dsl.break_() is C++'s break in the innermost tc.range (Python's own break is refused: it would end the
    trace, not the loop); outside a tc.range it is an error. Run in the emulator where g++ exists."""
    x, out = torch.tensor([1.0, 2.0, -1.0, 3.0]), torch.zeros(1, dtype=torch.int32)
    src = count_until_negative.source(x, out, 4)
    assert re.search(r"for \(int \w+ = 0; [^{]*\{[^}]*if \(\w+ < 0\.0f\) \{\s*break;\s*\}\s*c = c \+ 1;", src), src
    with pytest.raises(TraceError, match="outside a tc.range"):
        break_outside_a_loop.source(x)
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gemm"))
    import emulate
    if not emulate.available():
        pytest.skip("no g++ for the emulator")
    emulate.launch(count_until_negative, (1,), (1,), x, out, 4)
    assert int(out[0]) == 2


@dsl.kernel
def runtime_register_index(x, n):
    r = dsl.make_rmem_tensor(dsl.float32, 8)
    dsl.clear(r)
    for k in dsl.range(n):
        x[k] = r[k]


@dsl.kernel
def stale_register_read(x):
    r = dsl.make_rmem_tensor(dsl.float32, 2)
    dsl.clear(r)
    old = [r.engine.load(0)]  # a list: the tracer does not snapshot it into a variable
    r[0] = 5.0
    x[0] = old[0]


def test_language_misuse_errors():
    with pytest.raises(TraceError, match="must directly follow"):
        bad_else.source(torch.zeros(2))
    with pytest.raises(TraceError, match="left open"):
        loop_break.source(torch.zeros(2), 4)
    with pytest.raises(TraceError, match="compile-time indices"):
        runtime_register_index.source(torch.zeros(2), 4)
    with pytest.raises(TraceError, match="after r\\[0\\] was overwritten"):
        stale_register_read.source(torch.zeros(2))


@dsl.kernel
def smem_kernel(x, n_elems: Constexpr):
    dsl.launch_bounds(128)
    s = dsl.smem_tensor(dsl.float32, tc.make_layout(n_elems))              # (N)
    s[threadIdx.x] = x[threadIdx.x]
    dsl.syncthreads()
    x[threadIdx.x] = s[127 - threadIdx.x]


def test_shared_memory_static_and_dynamic():
    src = smem_kernel.source(torch.zeros(4), 1024)
    assert "__launch_bounds__(128)" in src
    assert "__shared__ __align__(128) float s[1024];  // (N)" not in src  # declarations sit in the prologue
    assert "    __shared__ __align__(128) float s[1024];" in src
    assert "__syncthreads();" in src
    spec = smem_kernel.specialize(torch.zeros(4), 1024)
    assert spec.smem_bytes == 0 and spec.max_threads == 128
    big = smem_kernel.specialize(torch.zeros(4), 16384)  # 64 KB: dynamic shared memory
    assert "extern __shared__ __align__(128) unsigned char tc_smem[];" in big.source
    assert "float* s = reinterpret_cast<float*>(tc_smem + 0);" in big.source
    assert big.smem_bytes == 65536


@dsl.kernel
def recast_kernel(x, n_floats: Constexpr, offset: Constexpr):
    dsl.launch_bounds(128)
    s = dsl.smem_tensor(dsl.float16, tc.make_layout(256))                  # (N)
    s[threadIdx.x] = x[threadIdx.x]
    dsl.syncthreads()
    r = dsl.recast_smem(s, offset, dsl.float32, tc.make_layout(n_floats))   # the same buffer, as floats
    r[threadIdx.x % n_floats] = 1.0


def test_recast_smem_views_a_buffer_as_another_type():
    """dsl.recast_smem: a new pointer into a shared-memory buffer from an element on, as another element type in a
    layout of its own; refused past the buffer's end or off a 16-byte boundary."""
    src = recast_kernel.source(torch.zeros(4), 64, 128)                     # floats 64..127 of the 512 bytes
    assert "float* r = reinterpret_cast<float*>(s + 128);" in src
    assert src.count("__shared__") == 1
    recast_kernel.source(torch.zeros(4), 128, 0)                            # the whole buffer
    with pytest.raises(TraceError, match="takes 516 bytes.*holds 512"):
        recast_kernel.source(torch.zeros(4), 129, 0)
    with pytest.raises(TraceError, match="takes 260 bytes.*holds 256"):
        recast_kernel.source(torch.zeros(4), 65, 128)
    with pytest.raises(TraceError, match="not 16-byte aligned"):
        recast_kernel.source(torch.zeros(4), 8, 4)


def test_specializations_are_cached_and_keyed():
    x = torch.zeros(4)
    s1 = smem_kernel.specialize(x, 1024)
    assert smem_kernel.specialize(torch.zeros(9), 1024) is s1  # shapes are runtime
    assert smem_kernel.specialize(x, 512) is not s1  # Constexpr values are compile-time
    a = axpy.specialize(x, x, 1.0, 10)
    assert axpy.specialize(x, x, 3.0, 11) is a
    b = axpy.specialize(x, x, 1.0, 1)  # an int equal to 1 is compiled as the static 1
    assert b is not a and "int n" not in b.source and "if (i < 1)" in b.source
    # an unaligned data pointer is a different specialization (alignment enables vector accesses)
    assert axpy.specialize(x[1:], x, 1.0, 10) is not a


@dsl.kernel
def defaults(x, n, scale=2.0, width: Constexpr = 4):
    x[threadIdx.x] = scale * n + width


def test_positional_binding_matches_the_signature():
    # a launch binds positional arguments without inspect; keywords, defaults and errors as Signature.bind
    x = torch.zeros(4)
    full = defaults._key((x, 3, 2.0, 4), {})
    assert defaults._key((x, 3), {})[0] == full[0] and defaults._key((x, 3, 2.0), {})[0] == full[0]
    assert defaults._key((x,), {"n": 3, "width": 4})[0] == full[0]
    assert defaults._key((x, 3), {})[2] == {"x": x, "n": 3, "scale": 2.0, "width": 4}
    assert defaults._key((x, 3, 2.0, 8), {})[0] != full[0]
    with pytest.raises(TypeError, match="defaults: missing"):
        defaults._key((x,), {})
    with pytest.raises(TypeError, match="defaults: too many"):
        defaults._key((x, 3, 2.0, 4, 5), {})


def test_dump_writes_the_source(tmp_path, monkeypatch):
    monkeypatch.setenv("TILECRAFT_DUMP", str(tmp_path))
    src = loops.source(torch.zeros(8), 3, 2)
    files = list(tmp_path.glob("loops-*.cu"))
    assert len(files) == 1 and files[0].read_text() == src


def test_kernel_call_requires_a_launch_configuration():
    with pytest.raises(TypeError, match=r"axpy\[grid, block\]"):
        axpy(torch.zeros(2), torch.zeros(2), 1.0, 2)
    with pytest.raises(TypeError, match="axpy: missing"):
        axpy.source(torch.zeros(2))


@dsl.kernel
def strided(x, y):
    # a 2-D tensor argument: shape and strides are runtime, except the unit stride
    y[threadIdx.x, 1] = x[1, threadIdx.x]


def test_tensor_arguments_use_their_strides():
    x = torch.zeros(3, 5)          # strides (5, 1)
    y = torch.zeros(5, 3).t()      # (3, 5) with strides (1, 3)
    src = strided.source(x, y)
    assert "int x_stride_0" in src and "x_stride_1" not in src
    assert "int y_stride_1" in src and "y_stride_0" not in src
    assert "x[x_stride_0 + int(threadIdx.x)]" in src
    assert "y[int(threadIdx.x) + y_stride_1]" in src


def test_top_level_names_reach_the_language_lazily():
    import subprocess
    import sys

    code = ("import sys, tilecraft as tc; assert 'tilecraft.dsl' not in sys.modules and 'torch' not in sys.modules; "
            "assert tc.kernel is __import__('tilecraft.dsl').dsl.kernel and tc.range is tc.dsl.range; "
            "assert tc.copy_if is tc.dsl.copy_if and tc.threadIdx is tc.dsl.threadIdx")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_launch_passes_the_used_leaves_in_signature_order(monkeypatch):
    calls = []
    monkeypatch.setattr(dsl.Kernel, "_compile", lambda self, key, arch: lambda *a, **kw: calls.append((a, kw)))
    x = torch.zeros(3, 5)
    y = torch.zeros(5, 3).t()
    strided[(2,), 32](x, y)
    ((args, kw),) = calls
    assert args == (x, 5, y, 3)  # x, x_stride_0, y, y_stride_1: the parameters the source declares
    assert kw == dict(grid=(2,), block=32, smem=0, stream=None, cluster=None, pdl=False, cooperative=False)
    big = torch.zeros(4)
    smem_kernel.launch(big, 16384, grid=1, block=128)
    assert calls[-1][1]["smem"] == 65536  # dynamic shared memory is passed by the launch
    with pytest.raises(ValueError, match="launch_bounds\\(128\\)"):
        smem_kernel.launch(big, 16384, grid=1, block=256)


@dsl.kernel
def scaled_pair(xy, out, alpha, n, bias, width: Constexpr = 2):
    # a tuple of tensors, a float, an int, an optional tensor: the leaves a bound launch reads or fixes
    i = threadIdx.x
    with dsl.if_(i < n):
        v = alpha * xy[0][i] + xy[1][i] + width
        out[i] = v if bias is None else v + bias[i]


class _Recorded:
    """Stands in for a compiled kernel: records each launch's arguments and settings, called with them or through
    its launcher of one configuration (as a bound launch calls it)."""

    def __init__(self, calls):
        self.calls = calls

    def __call__(self, *a, **kw):
        self.calls.append((a, kw))

    def launcher(self, grid, block, smem=0, cluster=None, pdl=False, cooperative=False):
        return lambda *a, stream=None: self.calls.append((a, dict(grid=grid, block=block, smem=smem, stream=stream,
                                                                  cluster=cluster, pdl=pdl, cooperative=cooperative)))


def test_bound_launch_reads_addresses_and_floats_and_fixes_the_rest(monkeypatch):
    calls = []
    monkeypatch.setattr(dsl.Kernel, "_compile", lambda self, key, arch: _Recorded(calls))
    x, y, out, b = (torch.zeros(64)[1::2] for k in range(4))   # strided and unaligned: both in the key
    bound = scaled_pair.bind((x, y), out, 1.5, 32, b, 2, grid=(1,), block=(32,))
    x2, y2, out2, b2 = (torch.zeros(64)[1::2] for k in range(4))
    assert bound.matches((x2, y2), out2, -3.0, 32, b2, 2)
    bound((x2, y2), out2, -3.0, 32, b2, 2)
    scaled_pair.launch((x2, y2), out2, -3.0, 32, b2, 2, grid=(1,), block=(32,))
    (fast, kw_fast), (slow, kw_slow) = calls
    assert len(fast) == len(slow) and all(f is s or f == s for f, s in zip(fast, slow))   # tensors are the new ones
    assert fast[0] is x2 and [v for v in fast if isinstance(v, float)] == [-3.0] and kw_fast == kw_slow
    # what the key fixes is not read again: another n, width, layout or alignment does not match the binding
    assert not bound.matches((x2, y2), out2, -3.0, 31, b2, 2)
    assert not bound.matches((x2, y2), out2, -3.0, 32, b2, 4)
    assert not bound.matches((x2.contiguous(), y2), out2, -3.0, 32, b2, 2)
    assert not bound.matches((x2, y2), out2, -3.0, 32, None, 2)
    scaled_pair.bind((x, y), out, 1.5, 32, b, grid=(1,), block=(32,))          # a defaulted Constexpr: fine
    with pytest.raises(TypeError, match="positionally"):
        defaults.bind(x, 3, grid=(1,), block=(32,))                            # a defaulted float: read how?


@dsl.kernel
def rotating(x, n):
    slot = dsl.declare(0, "slot", const=False)                          # 0, 1, 2, 0, ...
    for k in dsl.range(n):
        x[k] = x[slot]
        dsl.assign(slot, dsl.where(slot < 2, slot + 1, 0))


def test_mutable_variable_carried_by_a_loop():
    src = rotating.source(torch.zeros(8), 7)
    assert "int slot = 0;" in src and "const int slot" not in src
    assert re.search(r"const float v\d* = x\[slot\];", src)
    assert "slot = slot < 2 ? slot + 1 : 0;" in src
    with pytest.raises(TraceError, match="assign needs a variable"):
        rotating_bad.source(torch.zeros(8))


@dsl.kernel
def rotating_bad(x):
    dsl.assign(threadIdx.x + 1, 0)


@dsl.kernel
def running_offset(x, n, step: Constexpr):
    off = dsl.declare(0, "off", const=False, div=4)                     # stays a multiple of 4
    for k in dsl.range(n):
        x[off] = 0.0
        dsl.assign(off, off + step)


def test_mutable_variable_keeps_only_its_declared_divisibility():
    assert "off = off + 8;" in running_offset.source(torch.zeros(8), 2, 8)    # a static step of 8: fine
    with pytest.raises(TraceError, match="multiple of off's div=4"):
        running_offset.source(torch.zeros(8), 2, 6)
