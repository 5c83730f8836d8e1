"""Stream-K in the Hopper GEMM (tilecraft/gemm/sm90.py): the division of k-iterations over the clusters covers
every (unit, k-tile) once and gives every split unit one finisher that waits for exactly the clusters that
published a partial of it (the same functions the kernel traces, run on ints); every stream-K configuration
compiles for sm_90a without spills; on an H100/H200 the results match float64 (ragged, batched, clustered,
every epilogue), repeat bit for bit and leave the flags at 0."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tilecraft.runtime as rt  # noqa: E402
from tilecraft.gemm import GemmOp, Sm90Config  # noqa: E402
from tilecraft.gemm import sm90  # noqa: E402
from tilecraft.gemm.sm90 import stream_k_first_peer, stream_k_item, stream_k_items, stream_k_share  # noqa: E402
from tilecraft.gemm.tensorop import EpilogueSpec  # noqa: E402


def _walk(units, k_tiles, clusters, mode):
    """Every cluster's items as the kernel walks them: {(unit, k): cluster}, {cluster: unit it publishes},
    {unit: (finisher, peers it waits for)}, {cluster: [(unit, k_begin, k_count), ...] in order}."""
    owner, published, finished, walks = {}, {}, {}, {}
    for c in range(clusters):
        share = stream_k_share(units, k_tiles, clusters, c, mode=mode)
        items, whole = stream_k_items(share, units, k_tiles, clusters)
        walks[c] = []
        for item in range(items):
            unit, k_begin, k_count = stream_k_item(item, share, whole, units, k_tiles, clusters, c)
            walks[c].append((unit, k_begin, k_count))
            assert 0 <= unit < units and k_count >= 1 and k_begin + k_count <= k_tiles
            for k in range(k_begin, k_begin + k_count):
                assert (unit, k) not in owner, f"({unit}, {k}) computed twice"
                owner[unit, k] = c
            if k_begin + k_count < k_tiles:
                assert c not in published, f"cluster {c} publishes two partial tiles"
                published[c] = unit
            elif k_begin > 0:
                finished[unit] = (c, list(range(stream_k_first_peer(unit, share, units, k_tiles), c)))
    return owner, published, finished, walks


def _run(walks, k_tiles, published, finished):
    """Runs the clusters' walks in time, a k-tile per step each, a finisher waiting at its unit's end until
    every peer has published; returns {cluster: step its walk ends} (an AssertionError if they deadlock)."""
    pos = {c: 0 for c in walks}                                           # next item
    left = {c: (w[0][2] if w else 0) for c, w in walks.items()}          # k-tiles left in that item
    done_at, posted, t = {c: 0 for c, w in walks.items() if not w}, set(), 0
    while len(done_at) < len(walks):
        moved = False
        for c, w in walks.items():
            if c in done_at:
                continue
            if left[c] > 0:
                left[c] -= 1
                moved = True
                continue
            unit, _k_begin, _k_count = w[pos[c]]
            if unit in finished and finished[unit][0] == c and not all(p in posted for p in finished[unit][1]):
                continue                                                  # waits for a peer's flag
            if published.get(c) == unit:
                posted.add(c)
            pos[c] += 1
            moved = True
            if pos[c] == len(w):
                done_at[c] = t
            else:
                left[c] = w[pos[c]][2]
        assert moved, "the clusters wait for each other"
        t += 1
    return done_at


@pytest.mark.parametrize("mode", [1, 2])
@pytest.mark.parametrize("clusters", [1, 2, 3, 7, 66, 132])
def test_every_iteration_once_and_every_finisher_waits_for_its_publishers(clusters, mode):
    few = range(1, 3 * clusters + 3)
    for units in few if clusters < 20 else (1, 40, 65, 66, 67, 80, 131, 132, 133, 160, 200, 264, 300, 448):
        for k_tiles in (1, 2, 3, 5, 64, 128):
            owner, published, finished, walks = _walk(units, k_tiles, clusters, mode)
            assert len(owner) == units * k_tiles
            split = {u for (u, _k), c in owner.items() if owner[u, k_tiles - 1] != c}
            assert set(finished) == split
            for unit, (c, peers) in finished.items():
                assert owner[unit, k_tiles - 1] == c
                assert sorted(p for p, u in published.items() if u == unit) == peers
            _run(walks, k_tiles, published, finished)


def test_stream_k_shares_start_at_k_0_and_stay_together():
    # 128 units of 128 k-tiles on 132 clusters (mode 2 shares all: 124.1 k-tiles each): at every step t each
    # cluster computes a k-tile in [t, t + 4], so the clusters running together read the same k-tiles of A and
    # B (in unit order cluster c started at k-tile 124.1 c % 128: spread over all 128)
    owner, published, finished, walks = _walk(128, 128, 132, 2)
    assert sum(w[0][1] == 0 for w in walks.values()) == 128
    for c, w in walks.items():
        ks = [k for _u, k0, n in w for k in range(k0, k0 + n)]
        assert all(0 <= k - t <= 4 for t, k in enumerate(ks)), (c, w)
    # nobody waits: every finisher's peers published their slice (their first item) before it got there
    ends = _run(walks, 128, published, finished)
    assert max(ends.values()) <= 126


def test_stream_k_takes_the_partial_round_and_one_whole_round():
    # 288 tiles over 132 SMs: 24 left over. Mode 1 shares those 24 as 24 x 128 k-iterations (23 each) after
    # two whole rounds; mode 2 shares 156 units (the 24 and one round: 151 iterations each, 0.18 units more
    # than a whole unit), and 132 units stay whole
    assert stream_k_share(288, 128, 132, 0, mode=1) == (24, 132, 0, 23)
    assert stream_k_items(stream_k_share(288, 128, 132, 0, mode=1), 288, 128, 132) == (3, 2)
    sk_units, sharers, begin, end = stream_k_share(288, 128, 132, 0, mode=2)
    assert (sk_units, sharers, begin, end) == (156, 132, 0, 151)
    # cluster 5: one whole unit (5), then iterations [756, 907) of the last 156 units (132 ...): the start of
    # unit 132 + 7, all of 132 + 6, the end of 132 + 5 (its share's units last first)
    share = stream_k_share(288, 128, 132, 5, mode=2)
    assert share[2:] == (756, 907) and stream_k_items(share, 288, 128, 132) == (4, 1)
    assert [stream_k_item(i, share, 1, 288, 128, 132, 5) for i in range(4)] == [(5, 0, 128), (139, 0, 11),
                                                                               (138, 0, 128), (137, 116, 12)]
    for mode in (1, 2):
        assert stream_k_share(264, 128, 132, 7, mode=mode)[0] == 0       # whole rounds: no stream-K
        assert stream_k_share(80, 128, 132, 131, mode=mode)[:2] == (80, 132)  # fewer units than SMs: all shared
        assert stream_k_share(2, 3, 132, 9, mode=mode)[1:] == (6, 6, 6)  # 6 iterations: 6 sharers, 9 idle


def _compile(cfg, elem="bfloat16", ep=EpilogueSpec(), full=True, out=None):
    dt = getattr(torch, elem)
    A, Bt = torch.empty(1, 512, 512, dtype=dt), torch.empty(1, 512, 512, dtype=dt)
    D = torch.empty(1, 512, 512, dtype=out or (dt if dt.itemsize == 2 else torch.bfloat16))
    C = torch.empty(1, 512, 512, dtype=D.dtype) if ep.read_c else None
    bias = torch.empty(512, dtype=D.dtype) if ep.bias != "none" else None
    tmA, tmB = sm90.make_maps(A, Bt, cfg, elem)
    W = sm90.streamk_workspace(D, 132, cfg)
    flags = torch.zeros(132 * cfg.consumers, dtype=torch.int32)
    return (tmA, tmB, C, D, bias, np.float32(1), np.float32(0), 512, W, cfg, elem, ("K", "K"), ep, full,
            sm90.d_map(D, cfg), flags)


@pytest.mark.parametrize("cfg", [Sm90Config(stages=4, stream_k=2), Sm90Config(stages=3, cluster_m=2, stream_k=2),
                                 Sm90Config(128, 128, 64, 6, cluster_m=2, stream_k=2),
                                 Sm90Config(64, 128, 64, 8, consumers=1, stream_k=2)], ids=lambda c: c.name)
def test_stream_k_compiles_without_spills(cfg):
    args = _compile(cfg)
    k = sm90.sm90_gemm_kernel.compile(*args, arch="sm_90a")
    assert k.resources.spill_store_bytes == 0 and k.resources.stack_frame_bytes == 0, k.resources
    assert "serialized" not in k.module.log
    src = sm90.sm90_gemm_kernel.source(*args)
    # the hand-off: 16-byte stores of the partial, a release per warpgroup, acquire-waits and resets
    assert "tc::flag_release(flags + int(blockIdx.x)" in src and "tc::flag_wait(flags + cta" in src
    assert src.count("tc::flag_release(") == 2 and "uint4" in src
    if rt.find_tool("cuobjdump") or rt.find_tool("nvdisasm"):
        text = rt.sass(k.module.cubin)
        assert "HGMMA" in text and "STG.E.128" in text and "LDG.E.128" in text


def test_stream_k_compiles_for_fp8_and_the_register_epilogue():
    ep = EpilogueSpec(read_c=True, unit_alpha=False, bias="n", activation="gelu")
    for cfg, elem, out in ((Sm90Config(128, 256, 128, stages=4, stream_k=2), "float8_e4m3fn", None),
                           (Sm90Config(stream_k=2), "float16", torch.float32)):
        k = sm90.sm90_gemm_kernel.compile(*_compile(cfg, elem, ep, full=False, out=out), arch="sm_90a")
        assert k.resources.spill_store_bytes == 0, (cfg.name, k.resources)


def test_timeline_compiles_and_leaves_the_kernel_alone_without_it():
    """sm90_gemm_kernel(timeline=...) (benchmarks/probe_sm90_timeline.py): the start and three stamps per work
    unit, without spills; without a timeline no timer is read."""
    for cfg in (Sm90Config(64, 128, 64, 8, consumers=1, stream_k=2), Sm90Config(128, 256, 64, 4, cluster_m=2)):
        args = _compile(cfg)
        assert "globaltimer" not in sm90.sm90_gemm_kernel.source(*args)
        tl = torch.zeros(132, 2 + 3 * sm90.TIMELINE_ITEMS, dtype=torch.int64)
        assert sm90.sm90_gemm_kernel.source(*args, timeline=tl).count("tc::globaltimer()") == 4
        k = sm90.sm90_gemm_kernel.compile(*args, timeline=tl, arch="sm_90a")
        assert k.resources.spill_store_bytes == 0 and "serialized" not in k.module.log, (cfg.name, k.resources)


def test_stream_k_config_rules():
    assert Sm90Config(stream_k=2).name.endswith("_streamk2")
    with pytest.raises(ValueError, match="stream_k is 0"):
        Sm90Config(stream_k=3).validate()
    with pytest.raises(ValueError, match="choose one"):
        Sm90Config(splits=2, stream_k=2).validate()
    from tilecraft.gemm.sm90_mixed import Sm90MixedConfig
    from tilecraft.quant.pack import PackedFormat
    mixed = Sm90MixedConfig()
    with pytest.raises(ValueError, match="stream-K is not wired"):
        replace(mixed, tile=replace(mixed.tile, stream_k=2)).validate(PackedFormat(4, 128, False, "bfloat16"))
    with pytest.raises(Exception, match="workspace W and flags"):
        cfg = Sm90Config(stream_k=2)
        args = list(_compile(cfg))
        args[-1] = None
        sm90.sm90_gemm_kernel.source(*args)


# ----------------------------------------------------------------------------------------- GPU

def _hopper():
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


SK = Sm90Config(stages=4, stream_k=2)
SK1 = Sm90Config(stages=4, stream_k=1)
SK_CL = Sm90Config(stages=3, cluster_m=2, stream_k=2)
CASES = [
    dict(M=256, N=2560, K=8192, cfg=SK),                                     # 20 tiles over the SMs: all shared
    dict(M=256, N=2560, K=8192, cfg=SK_CL),                                  # in clusters of 2 (10 units)
    dict(M=4096, N=2304, K=520, cfg=SK),                                     # 288 tiles: hybrid, ragged K
    dict(M=4096, N=2304, K=1000, cfg=SK1),                                   # 2 rounds, then 24 tiles shared
    dict(M=1000, N=2000, K=3000, bias="n", cfg=replace(SK_CL, stream_k=1)),  # 32 units over 66 clusters
    dict(M=4000, N=2300, K=1000, C=True, beta=-0.5, bias="n", act="gelu", cfg=SK_CL),  # ragged M, N, epilogue
    dict(M=300, N=700, K=3000, L=3, cfg=Sm90Config(128, 128, 64, 6, stream_k=2)),   # batched, 18 tiles
    dict(M=200, N=1000, K=5000, out="float32", cfg=Sm90Config(64, 128, 64, 8, consumers=1, stream_k=2)),
    dict(M=64, N=64, K=64, cfg=SK),                                           # one k-tile: one sharer
    dict(M=130, N=260, K=200, cfg=SK_CL),                                     # 3 k-tiles over 2 units
]


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items() if k != "cfg") + "-"
                         + c["cfg"].name)
def test_stream_k_matches_float64_and_repeats_exactly(case):
    if not _hopper():
        pytest.skip("needs sm_90")
    torch.manual_seed(0)
    M, N, K, L = case["M"], case["N"], case["K"], case.get("L")
    lead = () if L is None else (L,)
    A = torch.randn(*lead, M, K, device="cuda").to(torch.bfloat16)
    B = torch.randn(*lead, N, K, device="cuda").to(torch.bfloat16).transpose(-1, -2)   # K-major: TMA-ready at any N
    C = torch.randn(*lead, M, N, device="cuda").to(torch.bfloat16) if case.get("C") else None
    along = case.get("bias", "none")
    bias = torch.randn(N, device="cuda").to(torch.bfloat16) if along != "none" else None
    act, out = case.get("act", "none"), case.get("out")
    alpha, beta = 1.0, case.get("beta", 0.0)
    op = GemmOp("bfloat16", out, case["cfg"], act, along)
    D = op(A, B, C, alpha=alpha, beta=beta, bias=bias)
    x = A.double() @ B.double()
    if C is not None:
        x = x + beta * C.double()
    if bias is not None:
        x = x + bias.double()
    ref = torch.nn.functional.gelu(x) if act == "gelu" else x
    err = float((D.double() - ref).norm() / ref.norm())
    assert err < (1e-4 if out == "float32" else 1.5e-2), err
    for _ in range(3):                       # the partials are added in a fixed order: the same bits each time
        assert torch.equal(op(A, B, C, alpha=alpha, beta=beta, bias=bias), D)


@pytest.mark.gpu
def test_flags_return_to_zero_and_the_grid_is_every_sm():
    if not _hopper():
        pytest.skip("needs sm_90")
    torch.manual_seed(2)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    A3 = torch.randn(1, 256, 4096, device="cuda").to(torch.bfloat16)
    Bt = torch.randn(1, 2560, 4096, device="cuda").to(torch.bfloat16)
    D3 = torch.empty(1, 256, 2560, device="cuda", dtype=torch.bfloat16)
    one, zero = np.float32(1), np.float32(0)
    launch = sm90.Launch(A3, Bt, None, D3, None, one, zero, SK_CL, "bfloat16", EpilogueSpec(), sms)
    assert launch.grid == sms // 2 * 2 and launch.cfg.stream_k
    assert launch.main.cooperative                                      # (in 2x1 clusters)
    for _ in range(3):
        launch(A3, Bt, None, D3, None, one, zero)
    torch.cuda.synchronize()
    (flags,) = launch._flags.values()
    assert flags.numel() == sms * 2 and int(flags.abs().sum()) == 0
    ref = A3[0].double() @ Bt[0].double().t()
    assert float((D3[0].double() - ref).norm() / ref.norm()) < 1.5e-2


@pytest.mark.gpu
def test_stream_k_beside_data_parallel_on_two_streams():
    """Two streams, one op: each stream keeps its own flags, so concurrent launches do not share them."""
    if not _hopper():
        pytest.skip("needs sm_90")
    torch.manual_seed(1)
    A = torch.randn(256, 8192, device="cuda").to(torch.bfloat16)
    B = torch.randn(8192, 2560, device="cuda").to(torch.bfloat16)
    op = GemmOp("bfloat16", None, SK)
    want = op(A, B)
    streams = [torch.cuda.Stream() for _ in range(2)]
    outs = []
    for s in streams:
        with torch.cuda.stream(s):
            outs.append([op(A, B) for _ in range(4)])
    torch.cuda.synchronize()
    assert all(torch.equal(o, want) for group in outs for o in group)
    dp = GemmOp("bfloat16", None, replace(SK, stream_k=0))(A, B)
    assert float((dp.double() - want.double()).norm() / want.double().norm()) < 1e-2
