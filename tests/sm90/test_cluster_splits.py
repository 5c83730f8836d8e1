"""Split-K within a cluster (``Sm90Config(cluster_splits=True)``): the splits of a tile are the CTAs of one
cluster and sum their fp32 partial tiles through distributed shared memory (``sm90._cluster_sum``).

CPU: the rules, the generated program (the two cluster barriers of each unit on both roles, the reads of every
split's shared memory, no workspace or flags) and its compilation for every tiling that takes it. GPU: results
against float64 for ragged shapes, batches, both majors, every epilogue, and a grid with fewer clusters than
tiles (each cluster then walks several tiles and the producer waits for the second barrier before it
refills the stages the partials live in)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tilecraft as tc  # noqa: E402
import tilecraft.runtime as rt  # noqa: E402
from tilecraft import dsl  # noqa: E402
from tilecraft.dsl import blockIdx, hopper, threadIdx  # noqa: E402
from tilecraft.gemm import Sm90Config  # noqa: E402
from tilecraft.gemm import sm90  # noqa: E402
from tilecraft.gemm.tensorop import EpilogueSpec  # noqa: E402

MID = Sm90Config(128, 128, 64, 6, splits=8, cluster_splits=True)
TILINGS = [MID, replace(MID, splits=4), replace(MID, splits=2), Sm90Config(64, 128, 64, 8, consumers=1, splits=8,
                                                                          cluster_splits=True)]


def _hopper() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0)


def _args(cfg, ep=EpilogueSpec(), full=True, M=512, N=512, K=8192, L=1, majors="KK"):
    dt = torch.bfloat16
    A = torch.empty(L, M, K, dtype=dt) if majors[0] == "K" else torch.empty(L, K, M, dtype=dt).transpose(1, 2)
    Bt = torch.empty(L, N, K, dtype=dt) if majors[1] == "K" else torch.empty(L, K, N, dtype=dt).transpose(1, 2)
    D = torch.empty(L, M, N, dtype=dt)
    C = torch.empty(L, M, N, dtype=dt) if ep.read_c else None
    bias = torch.empty(N, dtype=dt) if ep.bias != "none" else None
    tmA, tmB = sm90.make_maps(A, Bt, cfg, "bfloat16")
    return (tmA, tmB, C, D, bias, np.float32(1), np.float32(0), K, None, cfg, "bfloat16", sm90.operand_majors(A, Bt),
            ep, full)


def test_cluster_splits_rules():
    """What the cluster-split sum needs, each refused with its reason: 2..8 splits (the portable cluster),
    no multicast cluster beside them, the fp32 partial within the A stages, whole 4-value blocks per split."""
    for cfg in TILINGS:
        cfg.validate()
        assert sm90.cluster_splits_problem(cfg) is None and cfg.launch_cluster == cfg.splits
    assert MID.name == "sm90_128x128x64_s6_c2_sk8_dsmem" and MID.cluster == 1
    assert replace(MID, cluster_splits=False).launch_cluster == 1
    for cfg, words in [(replace(MID, splits=16), "2 to 8"), (replace(MID, splits=1), "2 to 8"),
                       (replace(MID, cluster_m=2), "multicast"), (replace(MID, stages=3), "A stages"),
                       (Sm90Config(128, 256, 64, 4, splits=2, cluster_splits=True), "A stages"),
                       (replace(MID, splits=3), "divide")]:
        with pytest.raises(ValueError, match=words):
            cfg.validate()
    # split-K summed in the kernel through flags is for CTAs without a cluster only
    assert not sm90.fused_split_reduction(MID, 16, 132)


@pytest.mark.parametrize("cfg", TILINGS, ids=lambda c: c.name)
def test_cluster_splits_program_and_compilation(cfg):
    """The producer warpgroup and each consumer meet two cluster barriers per unit (after the partials are
    stored; after the peers' reads); the consumers store their partials in the A stages (16 bytes per thread
    in turn), read every split's shared memory through map_shared_rank and sum in split order; no
    workspace, no flags, no dependent launch. Compiles without spills or serialized wgmmas, whole and
    ragged, with every epilogue."""
    S = cfg.splits
    for ep, full in [(EpilogueSpec(), True), (EpilogueSpec(read_c=True, unit_alpha=False, bias="n", activation="gelu"),
                                              False)]:
        args = _args(cfg, ep, full)
        src = sm90.sm90_gemm_kernel.source(*args)
        assert src.count("tc::cluster_arrive();") == 4 and src.count("tc::cluster_wait();") == 4
        assert src.count("tc::map_shared_rank(sP, ") == S and "griddep" not in src and "flag" not in src
        for r in range(S):
            assert f"if (rank0 == {r})" in src                            # rank r sums its blocks
        consumer = src[src.index("tc::bar_sync(5,"):]                      # both consumers are done with the stages,
        order = [consumer.index(f) for f in ("tc::cluster_arrive();", "tc::map_shared_rank(sP, 0)",  # then they
                                             "tc::cluster_arrive();\n            if (rank0 == 0)")]  # store, read, sum
        assert order == sorted(order) and consumer.count("tc::cluster_arrive();") == 2
        k = sm90.sm90_gemm_kernel.compile(*args, arch="sm_90a")
        r = k.resources
        assert r.spill_store_bytes == 0 and r.stack_frame_bytes == 0 and "serialized" not in k.module.log, (cfg.name, r)
        if full and (rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm")):
            text = rt.sass(k.module.cubin)
            blocks = cfg.rows // 64 * cfg.blk_n // 8                       # 4-value blocks per consumer thread
            assert "HGMMA" in text and "UCGABAR_ARV" in text and "UCGABAR_WAIT" in text
            assert text.count("LD.E.128") == S * blocks                   # S peers x blocks/S, in each of S branches
            assert text.count("STS.128") == blocks and "STG.E.128" not in text  # the partial stays on chip


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


def _launch(cfg, A3, Bt, C3, D3, bias, alpha, beta, ep):
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return sm90.Launch(A3, Bt, C3, D3, bias, np.float32(alpha), np.float32(beta), cfg, "bfloat16", ep, sms)


def _reference(A3, Bt, C3, bias, alpha, beta, along, act):
    x = alpha * (A3.double() @ Bt.double().transpose(1, 2))
    if C3 is not None:
        x = x + beta * C3.double()
    if bias is not None:
        x = x + (bias.double() if along == "n" else bias.double()[:, None])
    return {"none": lambda v: v, "relu": torch.relu, "gelu": torch.nn.functional.gelu,
            "silu": torch.nn.functional.silu}[act](x)


def _operands(M, N, K, L, majors, C, along):
    A3 = torch.randn(L, M, K, device="cuda").bfloat16()
    if majors[0] == "M":
        A3 = A3.transpose(1, 2).contiguous().transpose(1, 2)
    Bt = torch.randn(L, N, K, device="cuda").bfloat16()
    if majors[1] == "N":
        Bt = Bt.transpose(1, 2).contiguous().transpose(1, 2)
    C3 = torch.randn(L, M, N, device="cuda").bfloat16() if C else None
    bias = torch.randn(N if along == "n" else M, device="cuda").bfloat16() if along != "none" else None
    return A3, Bt, C3, bias


@pytest.mark.gpu
@pytest.mark.parametrize("case", [
    dict(M=512, N=512, K=65536, cfg=MID),                                # issue 8's skinny shape
    dict(M=500, N=300, K=9000, C=True, beta=-1.0, along="n", act="gelu", cfg=MID),    # ragged tiles and K
    dict(M=256, N=384, K=4096, L=3, majors="MN", along="m", act="relu", cfg=replace(MID, splits=4)),
    dict(M=200, N=520, K=3000, fp32=True, majors="KN", cfg=replace(MID, splits=2)),
    dict(M=130, N=1000, K=5000, C=True, alpha=0.5, beta=0.5, act="silu", cfg=TILINGS[3]),
], ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items() if k != "cfg"))
def test_cluster_splits_match_float64(case):
    if not _hopper():
        pytest.skip("needs sm_90")
    torch.manual_seed(0)
    M, N, K, L = case["M"], case["N"], case["K"], case.get("L", 1)
    along, act = case.get("along", "none"), case.get("act", "none")
    alpha, beta = case.get("alpha", 1.0), case.get("beta", 0.0)
    A3, Bt, C3, bias = _operands(M, N, K, L, case.get("majors", "KK"), case.get("C"), along)
    D3 = torch.empty(L, M, N, device="cuda", dtype=torch.float32 if case.get("fp32") else torch.bfloat16)
    ep = EpilogueSpec(read_c=C3 is not None, unit_alpha=alpha == 1, bias=along, activation=act)
    launch = _launch(case["cfg"], A3, Bt, C3, D3, bias, alpha, beta, ep)
    assert launch.cfg.cluster_splits and launch.main.cluster == (case["cfg"].splits, 1, 1), launch.cfg.name
    assert launch.reduce is None and not launch.fused
    ref = _reference(A3, Bt, C3, bias, alpha, beta, along, act)
    for _ in range(2):                                                    # the same launch again: nothing left over
        D3.fill_(float("nan"))
        launch(A3, Bt, C3, D3, bias, np.float32(alpha), np.float32(beta))
        err = float((D3.double() - ref).norm() / ref.norm())
        assert err < (1e-4 if case.get("fp32") else 1.5e-2), err


@pytest.mark.gpu
def test_cluster_splits_with_fewer_clusters_than_tiles():
    """A grid of 2 clusters over 12 tiles: each cluster walks 6 tiles, the producer refilling the A stages only
    after every CTA has read the partials stored there (the unit's second cluster barrier)."""
    if not _hopper():
        pytest.skip("needs sm_90")
    torch.manual_seed(0)
    cfg = replace(MID, splits=4)
    A3, Bt, C3, bias = _operands(384, 512, 4096, 1, "KK", True, "n")
    D3 = torch.empty(1, 384, 512, device="cuda", dtype=torch.bfloat16)
    ep = EpilogueSpec(read_c=True, unit_alpha=False, bias="n", activation="none")
    launch = _launch(cfg, A3, Bt, C3, D3, bias, 0.5, -1.0, ep)
    assert launch.cfg.cluster_splits
    args = launch._args(A3, Bt, C3, D3, bias, np.float32(0.5), np.float32(-1.0), None, None)
    small = sm90.sm90_gemm_kernel.bind(*args, grid=(2 * cfg.splits,), block=(cfg.threads,), cluster=(cfg.splits, 1, 1))
    D3.fill_(float("nan"))
    small(*args)
    ref = _reference(A3, Bt, C3, bias, 0.5, -1.0, "n", "none")
    assert float((D3.double() - ref).norm() / ref.norm()) < 1.5e-2
