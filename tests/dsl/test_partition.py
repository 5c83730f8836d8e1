"""launch_bounds with min_blocks, the stride divisibility specialization, and the partition helpers
(vector_permutation, permute_modes)."""
from __future__ import annotations

import pytest
import torch

import tilecraft as tc
from tilecraft import dsl
from tilecraft.dsl import threadIdx
from tilecraft.dsl.partition import permute_modes, vector_permutation


@dsl.kernel
def row_copy(x, y):
    dsl.launch_bounds(64, 4)
    gx = tc.local_tile(x, (1, 4), (threadIdx.x, 0))                       # (1,4)
    gy = tc.local_tile(y, (1, 4), (threadIdx.x, 0))                       # (1,4)
    r = tc.make_fragment_like(gx)
    dsl.copy(gx, r)
    dsl.copy(r, gy)


def test_launch_bounds_min_blocks():
    src = row_copy.source(torch.zeros(64, 8), torch.zeros(64, 8))
    assert "__launch_bounds__(64, 4) row_copy(" in src


@dsl.kernel
def flagged_copy(x, y, flags: dsl.Constexpr):
    dsl.launch_bounds(64)
    dsl.ptxas_options(*flags)
    gx = tc.local_tile(x, (1, 4), (threadIdx.x, 0))                       # (1,4)
    gy = tc.local_tile(y, (1, 4), (threadIdx.x, 0))                       # (1,4)
    dsl.copy(gx, gy)


def test_ptxas_options_per_specialization():
    x, y = torch.zeros(64, 8), torch.zeros(64, 8)
    o1 = flagged_copy.specialize(x, y, ("-O1",))
    assert o1.ptxas_options == ("-O1",) and o1.source.splitlines()[1] == "// ptxas options: -O1"
    plain = flagged_copy.specialize(x, y, ())
    assert plain.ptxas_options == () and "ptxas options" not in plain.source
    # the flag reaches ptxas: -O0 keeps every copy's address arithmetic apart, so the cubins differ
    k0, k3 = (flagged_copy.compile(x, y, f, arch="sm_90a") for f in (("-O0",), ()))
    assert k0.module.cubin != k3.module.cubin
    for bad in ("-O4", "-maxrregcount=32", "--gpu-name=sm_80", 3):
        with pytest.raises(dsl.TraceError, match="ptxas_options"):
            flagged_copy.source(x, y, (bad,))


@dsl.kernel
def fenced_copy(x, y):
    gx = tc.local_tile(x, (1, 4), (threadIdx.x, 0))                       # (1,4)
    gy = tc.local_tile(y, (1, 4), (threadIdx.x, 0))                       # (1,4)
    r = tc.make_fragment_like(gx)
    dsl.copy(gx, r)
    tc.compiler_barrier()
    dsl.copy(r, gy)


def test_compiler_barrier_sits_between_the_statements_around_it():
    x, y = torch.zeros(64, 8), torch.zeros(64, 8)
    src = fenced_copy.source(x, y)
    load, fence, store = (src.index(s) for s in ("r) = *", 'asm volatile("" ::: "memory");', "gy) = *"))
    assert load < fence < store and src.count("asm volatile") == 1
    k = fenced_copy.compile(x, y, arch="sm_90a")  # no instruction of its own: the same resources as without
    assert k.resources.registers <= 16 and not k.resources.spills


def test_row_stride_divisibility_is_specialized():
    # rows of 8 floats: every row starts 16-byte aligned, so a row's 4 floats are one 128-bit access
    src8 = row_copy.source(torch.zeros(64, 8), torch.zeros(64, 8))
    assert src8.count("reinterpret_cast<const uint4*>") == 2
    # rows of 6 floats: only 8-byte aligned rows
    src6 = row_copy.source(torch.zeros(64, 6), torch.zeros(64, 6))
    assert "uint4" not in src6 and src6.count("reinterpret_cast<const uint2*>") == 4
    # a stride of 7: element by element; each power-of-two divisor (up to 16) is its own specialization
    src7 = row_copy.source(torch.zeros(64, 7), torch.zeros(64, 7))
    assert "reinterpret_cast" not in src7
    spec8 = row_copy.specialize(torch.zeros(64, 8), torch.zeros(64, 8))
    assert row_copy.specialize(torch.zeros(64, 24), torch.zeros(64, 24)) is spec8  # both multiples of 8
    spec12 = row_copy.specialize(torch.zeros(64, 12), torch.zeros(64, 12))  # a multiple of 4 only
    assert spec12 is not spec8 and spec12.source == src8


def test_vector_permutation_gives_each_thread_contiguous_runs():
    for threads, extent, vec in ((16, 128, 4), (8, 64, 2), (32, 128, 4)):
        P = vector_permutation(threads, extent, vec)
        assert sorted(P(i) for i in range(extent)) == list(range(extent))  # a permutation
        for t in range(threads):
            mine = [P(t + threads * j) for j in range(extent // threads)]  # raked: thread t's elements
            for r in range(0, len(mine), vec):
                run = mine[r:r + vec]
                assert run == list(range(run[0], run[0] + vec)) and run[0] % vec == 0
    with pytest.raises(ValueError, match="divide"):
        vector_permutation(16, 100)


def test_permute_modes_is_a_view():
    x = tc.make_tensor(torch.arange(12.0), tc.make_layout((3, 4)))
    y = permute_modes(x, 1, 0)
    assert y.shape == (4, 3) and y.engine is x.engine
    assert all(float(y(j, i)) == float(x(i, j)) for i in range(3) for j in range(4))
