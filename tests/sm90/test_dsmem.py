"""Distributed shared memory in the kernel language: ``hopper.map_shared_rank`` (a shared-memory tensor of
another CTA of the cluster), the cluster barrier's halves ``cluster_arrive`` / ``cluster_wait``, and shared-memory
pointers recast to another element type (``PointerEngine.recast``, CuTe's recast_ptr).

CPU: the generated program and its compilation (a 16-byte generic load of the peer's values, the barriers).
GPU: a 4-CTA cluster in which each CTA reads its neighbour's values."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import tilecraft as tc  # noqa: E402
import tilecraft.runtime as rt  # noqa: E402
from tilecraft import dsl  # noqa: E402
from tilecraft.dsl import blockIdx, hopper, threadIdx  # noqa: E402


def _hopper() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0)


@dsl.kernel
def _neighbour_kernel(out, rank_scale: dsl.Constexpr):
    """Each CTA of a 4-CTA cluster writes rank * rank_scale + i into its shared memory (through a byte buffer
    recast to fp32), then every thread reads 4 values of the next CTA's with one vector load."""
    raw = dsl.smem_tensor(dsl.uint8, tc.make_layout(4 * 512), align=16)
    eng, _off = dsl.make_smem_ptr(raw).recast(dsl.float32)
    s = tc.make_tensor(eng, tc.make_layout(512))
    rank = hopper.cluster_rank()
    for j in range(4):
        s[threadIdx.x * 4 + j] = dsl.convert(rank * rank_scale + threadIdx.x * 4 + j, dsl.float32)
    hopper.cluster_arrive()
    hopper.cluster_wait()                                                 # every CTA's values are in place
    peer = hopper.map_shared_rank(s, (rank + 1) % 4)
    frag = dsl.make_rmem_tensor(dsl.float32, tc.make_layout(4))
    dsl.copy(tc.local_tile(peer, (4,), (threadIdx.x,)), frag)
    hopper.cluster_arrive()                                               # this CTA's reads are done
    dsl.copy(frag, tc.local_tile(out, (4,), (blockIdx.x * 128 + threadIdx.x,)))
    hopper.cluster_wait()                                                 # and every other CTA's


def _neighbour_args(out):
    return (out, 1000)


def test_map_shared_rank_and_pointer_recast():
    """The language's distributed shared memory: ``map_shared_rank`` gives the same tensor in another CTA of the
    cluster (a generic pointer, so ``copy`` vectorizes reads of it); a shared-memory pointer recast to another
    element type (CuTe's recast_ptr) addresses the same bytes. Refuses tensors outside shared memory."""
    out = torch.empty(8 * 128 * 4, dtype=torch.float32)
    src = _neighbour_kernel.source(*_neighbour_args(out))
    assert "float* s = reinterpret_cast<float*>(raw);" in src
    assert "float* peer = tc::map_shared_rank(s, (rank + 1) % 4);" in src
    assert "reinterpret_cast<const uint4*>(peer + " in src                # one 16-byte load of the peer's
    k = _neighbour_kernel.compile(*_neighbour_args(out), arch="sm_90a")
    if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
        text = rt.sass(k.module.cubin)
        assert "LD.E.128" in text and "UCGABAR_ARV" in text
    with pytest.raises(dsl.TraceError, match="shared-memory tensor"):
        _bad_map_kernel.source(out)


@pytest.mark.gpu
def test_map_shared_rank_reads_the_neighbours_values():
    if not _hopper():
        pytest.skip("needs sm_90")
    out = torch.empty(8 * 128 * 4, dtype=torch.float32, device="cuda")   # 2 clusters of 4
    _neighbour_kernel.launch(*_neighbour_args(out), grid=(8,), block=(128,), cluster=(4, 1, 1))
    got = out.view(8, 512).cpu()
    ranks = torch.arange(8) % 4
    want = ((ranks + 1) % 4 * 1000)[:, None] + torch.arange(512)[None, :]
    assert torch.equal(got, want.float())


@dsl.kernel
def _bad_map_kernel(out):
    hopper.map_shared_rank(out, 1)
