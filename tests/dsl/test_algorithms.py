"""copy (vectorized), copy_if, gemm, axpby, clear, fill: the C++ they generate. CPU only."""
from __future__ import annotations

import re

import pytest
import torch

import tilecraft as tc
from tilecraft import dsl
from tilecraft.dsl import Constexpr, blockIdx, threadIdx


@dsl.kernel
def tile_copy(x, y, vec: Constexpr):
    gx = tc.local_tile(x, (128,), (blockIdx.x,))                          # (128)
    gy = tc.local_tile(y, (128,), (blockIdx.x,))                          # (128)
    tx = tc.local_tile(gx, (vec,), (threadIdx.x,))                        # (VEC)
    ty = tc.local_tile(gy, (vec,), (threadIdx.x,))                        # (VEC)
    r = tc.make_fragment_like(tx)                                         # (VEC)
    dsl.copy(tx, r)
    dsl.copy(r, ty)


def test_copy_is_vectorized_when_both_sides_allow():
    x, y = torch.zeros(1024), torch.zeros(1024)
    src = tile_copy.source(x, y, 4)
    assert "*reinterpret_cast<uint4*>(r) = *reinterpret_cast<const uint4*>(tx);" in src
    assert "*reinterpret_cast<uint4*>(ty) = *reinterpret_cast<const uint4*>(r);" in src
    src8 = tile_copy.source(x, y, 8)  # 8 floats: two 16-byte accesses
    assert "*reinterpret_cast<const uint4*>(tx + 4);" in src8
    src2 = tile_copy.source(x, y, 2)  # 8 bytes
    assert "*reinterpret_cast<uint2*>(r) = *reinterpret_cast<const uint2*>(tx);" in src2


def test_copy_falls_back_to_elements_when_alignment_is_unknown():
    x, y = torch.zeros(1025), torch.zeros(1024)
    src = tile_copy.source(x[1:], y, 4)  # x's data pointer is only 4-byte aligned
    assert "reinterpret_cast<const uint4*>(tx)" not in src
    assert re.search(r"r\[3\] = tx\[3\];", src)
    assert "*reinterpret_cast<uint4*>(ty) = *reinterpret_cast<const uint4*>(r);" in src


@dsl.kernel
def strided_copy(x, y):
    gx = tc.local_tile(x, (4, 1), (threadIdx.x % 2, 0))                   # (4,1)
    r = tc.make_fragment_like(gx)
    dsl.copy(gx, r)
    dsl.copy(r, tc.local_tile(y, (4, 1), (threadIdx.x % 2, 0)))


def test_copy_of_a_runtime_stride_is_elementwise():
    x = torch.zeros(64, 8).t()  # (8, 64) with strides (1, 8): the column is contiguous
    y = torch.zeros(8, 64)      # (8, 64) with strides (64, 1): the column has the runtime stride 64
    src = strided_copy.source(x, y)
    assert "uint4" in src.split("dsl.copy(r,")[0]  # x's column: vectorized
    assert "y_stride_0 * 3] = r[3];" in src


@dsl.kernel
def predicated(x, y, n):
    cx = tc.make_identity_tensor((n,))                                    # (n) -> (i)
    tx = tc.local_tile(x, (4,), (threadIdx.x,))                          # (4)
    ty = tc.local_tile(y, (4,), (threadIdx.x,))                          # (4)
    tc_ = tc.local_tile(cx, (4,), (threadIdx.x,))                        # (4)
    r = tc.make_fragment_like(tx)
    dsl.copy_if(dsl.elem_less(tc_, (n,)), tx, r, zfill=True)
    dsl.copy_if(dsl.elem_less(tc_, (n,)), r, ty)


def test_copy_if_predicates_each_element():
    src = predicated.source(torch.zeros(64), torch.zeros(64), 37)
    assert "const int tc__0 = int(threadIdx.x) * 4;" in src
    assert "r[1] = tc__0 + 1 < n ? tx[1] : 0.0f;" in src
    assert "if (tc__0 + 3 < n) ty[3] = r[3];" in src


@dsl.kernel
def guarded_reads(x, y, n):
    cx = tc.local_tile(tc.make_identity_tensor((n,)), (4,), (threadIdx.x,))  # (4) -> (i)
    tx = tc.local_tile(x, (4,), (threadIdx.x,))                          # (4)
    ty = tc.local_tile(y, (4,), (threadIdx.x,))                          # (4)
    for i in range(4):
        p = dsl.elem_less(cx(i), (n,))
        ty[i] = dsl.read_if(p, tx, i, 0.0) if i < 2 else dsl.where(p, tx(i), 0.0)
    ty[0] = ty(0) + dsl.read_if(True, tx, 1) + dsl.read_if(False, tx, 2, 7.0)


def test_read_if_reads_memory_only_under_its_predicate():
    """read_if puts the load inside the choice; where chooses between values, so tx(i) has been read
    before it (unguarded: a ragged tile's out-of-bounds read)."""
    src = guarded_reads.source(torch.zeros(64), torch.zeros(64), 37)
    assert "const float v0 = p ? tx[0] : 0.0f;" in src and "const float v1 = p_1 ? tx[1] : 0.0f;" in src
    assert "const float v2 = tx[2];" in src and "ty[2] = p_2 ? v2 : 0.0f;" in src   # where's operand: read first
    assert "const float v5 = tx[1];" in src and "ty[0] = v4 + v5 + 7.0f;" in src    # static predicates pick now


@dsl.kernel
def register_gemm(x, y, m: Constexpr, n: Constexpr, k: Constexpr):
    a = dsl.make_rmem_tensor(dsl.float32, (m, k))
    b = dsl.make_rmem_tensor(dsl.float32, (n, k))
    c = dsl.make_rmem_tensor(dsl.float32, (m, n))
    dsl.fill(a, 1.0)
    dsl.fill(b, 2.0)
    dsl.clear(c)
    dsl.gemm(a, b, c)                                                     # (M,N) += (M,K) * (N,K)
    dsl.axpby(1, c, 0, tc.local_tile(y, (m * n,), (threadIdx.x,)))


def test_gemm_is_one_fma_per_product():
    src = register_gemm.source(torch.zeros(4), torch.zeros(64), 2, 3, 4)
    assert len(re.findall(r"\n *c\[\d+\] \+= ", src)) == 2 * 3 * 4
    assert "c[0] += a[0] * b[0];" in src and "c[5] += a[7] * b[11];" in src
    assert src.count("a[0] = 1.0f;") == 1 and src.count("b[11] = 2.0f;") == 1
    # axpby with static alpha 1 and beta 0 stores c without reading y
    assert "y[4] = c[4];" in src.replace("y[int(threadIdx.x) * 6 + 4]", "y[4]") or re.search(r"\] = c\[4\];", src)
    assert "beta" not in src


@pytest.mark.parametrize("m, n", [(4, 2), (2, 4)])
def test_gemm_runs_along_the_longer_mode_serpentine(m, n):
    # per k: min(m, n) runs of max(m, n) FMAs, each with one operand fixed, every other run reversed, so
    # consecutive FMAs always share an operand (also across a run's end)
    src = register_gemm.source(torch.zeros(4), torch.zeros(64), m, n, 1)
    fmas = [(int(c), int(a), int(b)) for c, a, b in re.findall(r"c\[(\d+)\] \+= a\[(\d+)\] \* b\[(\d+)\];", src)]
    assert sorted(fmas) == sorted((i + j * m, i, j) for i in range(m) for j in range(n))
    fixed = [b for _, _, b in fmas] if m >= n else [a for _, a, _ in fmas]
    assert fixed == [v for v in range(min(m, n)) for _ in range(max(m, n))]
    moving = [a for _, a, _ in fmas] if m >= n else [b for _, _, b in fmas]
    assert moving == [0, 1, 2, 3, 3, 2, 1, 0]
    assert all(p[1] == q[1] or p[2] == q[2] for p, q in zip(fmas, fmas[1:]))


@dsl.kernel
def epilogue(c, alpha, beta):
    r = dsl.make_rmem_tensor(dsl.float32, 2)
    dsl.clear(r)
    dsl.axpby(alpha, r, beta, tc.local_tile(c, (2,), (threadIdx.x,)))     # (2)


def test_axpby_does_not_read_y_when_beta_is_zero():
    src = epilogue.source(torch.zeros(8), 1.5, 0.5)
    body = src.split("if (beta == 0.0f) {")[1]
    body = re.sub(r"//[^\n]*", "", body)
    then, other = body.split("} else {")
    assert "= alpha * r[1];" in then and "beta" not in then
    assert "c[int(threadIdx.x) * 2 + 1] = alpha * r[1] + beta * c[int(threadIdx.x) * 2 + 1];" in other


@dsl.kernel
def accumulate(c):
    r = dsl.make_rmem_tensor(dsl.float32, 2)
    dsl.clear(r)
    dsl.axpby(1.0, r, 1, tc.local_tile(c, (2,), (threadIdx.x,)))          # (2) c += r


def test_axpby_with_unit_scales_only_adds():
    src = re.sub(r"//[^\n]*", "", accumulate.source(torch.zeros(8)))
    assert "c[int(threadIdx.x) * 2 + 1] = r[1] + c[int(threadIdx.x) * 2 + 1];" in src
    assert "1.0f *" not in src and "1 *" not in src


@dsl.kernel
def guarded_vector_copy(x, y, n):
    from tilecraft.atoms import universal_copy
    tx = tc.local_tile(x, (8,), (threadIdx.x,))                           # (8)
    ty = tc.local_tile(y, (8,), (threadIdx.x,))                           # (8)
    cx = tc.local_tile(tc.make_identity_tensor((n,)), (8,), (threadIdx.x,))  # (8) -> (i)
    dsl.copy(universal_copy(128, val=16), tx, ty, pred=dsl.elem_less(cx, (n,)))


def test_plain_atom_copy_skips_where_the_predicate_is_false():
    src = guarded_vector_copy.source(torch.zeros(64, dtype=torch.float16), torch.zeros(64, dtype=torch.float16), 64)
    lines = [ln.strip() for ln in src.splitlines() if "copy_b128" in ln]
    assert len(lines) == 1 and lines[0] == "if (cx_0 < n) tc::copy_b128(tx, ty);"
