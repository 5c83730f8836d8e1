"""sm90.cuh compiles for sm_90a without a GPU, each wrapper becomes its PTX and SASS, nothing spills,
and the header refuses older targets with a CompileError that says what to do."""
from __future__ import annotations

import re

import pytest

import sm90_tools as tools
import tilecraft.runtime as rt
from tilecraft.atoms.sm90_codegen import HEADER_N, WGMMA_TYPE_PAIRS, wgmma_name

# Every non-wgmma wrapper, in the roles of a warp-specialized kernel: warpgroup 0 produces (TMA loads,
# plain and multicast, 1-5 d), warpgroup 1 consumes (waits, stmatrix, TMA stores, cluster signals).
ASYNC_SMOKE = r"""
#include <tilecraft/sm90.cuh>
extern "C" __global__ void __launch_bounds__(256, 1)
async_smoke(const __grid_constant__ CUtensorMap map, tc::u32* out, int c) {
    extern __shared__ __align__(1024) tc::u8 smem[];
    __shared__ __align__(8) tc::u64 bars[2];
    const tc::u32 tile = tc::smem_u32(smem);
    const tc::u32 full = tc::smem_u32(&bars[0]), empty = tc::smem_u32(&bars[1]);
    if (threadIdx.x == 0) {
        tc::mbarrier_init(full, 1);
        tc::mbarrier_init(empty, 128);
        tc::fence_mbarrier_init();
        tc::tma_prefetch_descriptor(&map);
    }
    tc::cluster_arrive_relaxed();
    tc::cluster_wait();
    if (threadIdx.x < 128) {
        tc::setmaxnreg_dec<40>();
        if (threadIdx.x < 32 && tc::elect_one_sync()) {
            tc::mbarrier_wait_parity(empty, 1);
            tc::mbarrier_arrive_expect_tx(full, 10 * 1024);
            tc::mbarrier_expect_tx(full, 1024);
            tc::tma_load_1d(tile, &map, full, c);
            tc::tma_load_2d(tile, &map, full, c, 1);
            tc::tma_load_3d(tile, &map, full, c, 1, 2);
            tc::tma_load_4d(tile, &map, full, c, 1, 2, 3);
            tc::tma_load_5d(tile, &map, full, c, 1, 2, 3, 4);
            const tc::u16 mask = 0x3;
            tc::tma_load_multicast_1d(tile, &map, full, mask, c);
            tc::tma_load_multicast_2d(tile, &map, full, mask, c, 1);
            tc::tma_load_multicast_3d(tile, &map, full, mask, c, 1, 2);
            tc::tma_load_multicast_4d(tile, &map, full, mask, c, 1, 2, 3);
            tc::tma_load_multicast_5d(tile, &map, full, mask, c, 1, 2, 3, 4);
        }
    } else {
        tc::setmaxnreg_inc<232>();
        while (!tc::mbarrier_try_wait_parity(full, 0)) {
        }
        const tc::u32 t = threadIdx.x - 128;
        tc::u32 r[4] = {t, t + 1, t + 2, t + 3};
        tc::stmatrix_x4(tile + 16 * t, r[0], r[1], r[2], r[3]);
        tc::stmatrix_x4_trans(tile + 4096 + 16 * t, r[3], r[2], r[1], r[0]);
        tc::fence_proxy_async_shared();
        tc::bar_sync(1, 128);
        if (t == 0) {
            tc::tma_store_1d(&map, tile, c);
            tc::tma_store_2d(&map, tile, c, 1);
            tc::tma_store_3d(&map, tile, c, 1, 2);
            tc::tma_store_4d(&map, tile, c, 1, 2, 3);
            tc::tma_store_5d(&map, tile, c, 1, 2, 3, 4);
            tc::tma_store_commit_group();
            tc::tma_store_wait_read<0>();
            tc::tma_store_wait<0>();
        }
        const tc::u32 peer = tc::cluster_ctarank() ^ 1;
        out[threadIdx.x] = tc::ld_shared_cluster_u32(tc::mapa_shared(tile + 4 * t, peer)) + tc::cluster_nctarank();
        tc::mbarrier_arrive(empty);
        tc::mbarrier_arrive_cluster(empty, peer);
    }
    tc::cluster_arrive();
    tc::cluster_wait();
    tc::cluster_sync();
}
"""


def wgmma_smoke(n: int) -> str:
    """One warpgroup issuing all fourteen wgmma wrappers of one N (A and B descriptors, or A registers)."""
    calls = []
    for a_type, b_type in WGMMA_TYPE_PAIRS:
        sixteen = a_type in ("f16", "bf16")
        calls.append(f"tc::{wgmma_name(n, a_type, b_type, 'ss')}{'<0, 1>' if sixteen else '<1, -1>'}"
                     f"(d, desc_a, desc_b, scale_d);")
        calls.append(f"tc::{wgmma_name(n, a_type, b_type, 'rs')}{'<1>' if sixteen else ''}(d, a, desc_b, 1);")
    body = "\n    ".join(calls)
    return rf"""
#include <tilecraft/sm90.cuh>
extern "C" __global__ void __launch_bounds__(128, 1)
wgmma_n{n}(float* out, const tc::u64* descs, const tc::u32* regs, tc::u32 scale_d) {{
    tc::f32 d[{n // 2}];
    for (int i = 0; i < {n // 2}; ++i) d[i] = 0.f;
    const tc::u64 desc_a = descs[0], desc_b = descs[1];
    const tc::u32 a[4] = {{regs[4 * threadIdx.x], regs[4 * threadIdx.x + 1], regs[4 * threadIdx.x + 2],
                          regs[4 * threadIdx.x + 3]}};
    tc::wgmma_fence();
    {body}
    tc::wgmma_commit_group();
    tc::wgmma_wait_group<0>();
    for (int i = 0; i < {n // 2}; ++i) out[{n // 2} * threadIdx.x + i] = d[i];
}}
"""


# PTX instruction -> how often the async smoke kernel issues it.
ASYNC_PTX = {
    "mbarrier.init.shared::cta.b64": 2, "fence.mbarrier_init.release.cluster": 1, "prefetch.tensormap": 1,
    "mbarrier.try_wait.parity.shared::cta.b64": 2, "mbarrier.arrive.expect_tx.shared::cta.b64": 1,
    "mbarrier.expect_tx.relaxed.cta.shared::cta.b64": 1, "mbarrier.arrive.shared::cta.b64": 1,
    "mbarrier.arrive.shared::cluster.b64": 1, "mapa.shared::cluster.u32": 2,
    "ld.shared::cluster.u32": 1, "setmaxnreg.inc.sync.aligned.u32 232": 1, "setmaxnreg.dec.sync.aligned.u32 40": 1,
    "elect.sync": 1, "stmatrix.sync.aligned.m8n8.x4.shared.b16": 1, "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16": 1,
    "fence.proxy.async.shared::cta": 1, "cp.async.bulk.commit_group": 1, "cp.async.bulk.wait_group.read 0": 1,
    "cp.async.bulk.wait_group 0": 1, "barrier.cluster.arrive.relaxed.aligned": 1, "barrier.cluster.arrive.aligned": 2,
    "barrier.cluster.wait.aligned": 3, "%cluster_ctarank": 1, "%cluster_nctarank": 1,
    **{f"cp.async.bulk.tensor.{r}d.shared::cluster.global.mbarrier::complete_tx::bytes [": 1 for r in range(1, 6)},
    **{f"cp.async.bulk.tensor.{r}d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster": 1
       for r in range(1, 6)},
    **{f"cp.async.bulk.tensor.{r}d.global.shared::cta.bulk_group": 1 for r in range(1, 6)},
}


def test_async_wrappers_emit_their_ptx():
    text = tools.ptx(ASYNC_SMOKE)
    for insn, count in ASYNC_PTX.items():
        assert text.count(insn) == count, (insn, text.count(insn))


@pytest.mark.parametrize("n", [8, 64, 256])
def test_wgmma_wrappers_emit_their_ptx(n):
    text = tools.ptx(wgmma_smoke(n))
    for a_type, b_type in WGMMA_TYPE_PAIRS:
        k = {"f16": 16, "bf16": 16, "tf32": 8}.get(a_type, 32)
        insn = f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{a_type}.{b_type}"
        assert text.count(insn) == 2, insn
    # the immediates land where the PTX ISA puts them: ..., p, scale-a, scale-b[, tnsp-a], tnsp-b
    f16 = re.findall(rf"m64n{n}k16\.f32\.f16\.f16 \{{[^}}]*\}}, (\{{[^}}]*\}}|%rd\d+), %rd\d+, p, ([-\d, ]+);", text)
    assert sorted(imm.replace(" ", "") for _a, imm in f16) == ["1,1,0,1", "1,1,1"]
    e4 = re.findall(rf"m64n{n}k32\.f32\.e4m3\.e4m3 .*, p, ([-\d, ]+);", text)
    assert sorted(imm.replace(" ", "") for imm in e4) == ["1,-1", "1,1"]
    # tf32 has scale-a and scale-b only (no transposes: K-major operands)
    tf32 = re.findall(rf"m64n{n}k8\.f32\.tf32\.tf32 \{{[^}}]*\}}, (\{{[^}}]*\}}|%rd\d+), %rd\d+, p, ([-\d, ]+);", text)
    assert sorted((a.startswith("{"), imm.replace(" ", "")) for a, imm in tf32) == [(False, "1,-1"), (True, "1,1")]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh cache so that each compile runs NVRTC and ptxas (whose report the spill checks read)."""
    monkeypatch.setenv("TILECRAFT_CACHE_DIR", str(tmp_path / "tccache"))
    rt.clear_memory_cache()
    yield
    rt.clear_memory_cache()


def _sass_or_skip(cubin: bytes):
    if tools.nvdisasm() is None:
        pytest.skip("no nvdisasm (pip install nvidia-cuda-nvdisasm)")
    return tools.opcodes(tools.sass(cubin))


def test_async_wrappers_become_their_sass(cache_dir):
    mod = rt.compile(ASYNC_SMOKE, arch="sm_90a", name="async_smoke.cu")
    res = mod.resources["async_smoke"]
    assert not res.spills and res.stack_frame_bytes == 0, res
    assert "C7508" not in mod.log  # ptxas would say so if it ignored setmaxnreg
    ops = _sass_or_skip(mod.cubin)
    # TMA: 10 loads (5 of them multicast), 5 stores; descriptor prefetch
    assert tools.count_prefix(ops, "UTMALDG") == 10, ops
    assert sum(n for op, n in ops.items() if op.startswith("UTMALDG") and ".MULTICAST" in op) == 5, ops
    assert tools.count_prefix(ops, "UTMASTG") == 5, ops
    assert ops["UTMACCTL.PF"] == 1, ops
    assert tools.count_prefix(ops, "UTMACMDFLUSH") >= 1, ops  # issues the bulk group's commit
    # mbarrier: init (EXCH), the four arrives (plain, expect_tx, expect_tx alone, remote), try_waits
    assert ops["SYNCS.EXCH.64"] == 2, ops
    assert tools.count_prefix(ops, "SYNCS.ARRIVE") == 4, ops
    assert tools.count_prefix(ops, "SYNCS.PHASECHK") >= 2, ops
    assert ops["USETMAXREG.DEALLOC.CTAPOOL"] == 1 and ops["USETMAXREG.TRY_ALLOC.CTAPOOL"] == 1, ops
    assert ops["STSM.16.M88.4"] == 1 and ops["STSM.16.MT88.4"] == 1, ops
    assert tools.count_prefix(ops, "UCGABAR_ARV") == 3 and tools.count_prefix(ops, "UCGABAR_WAIT") == 3, ops
    assert tools.count_prefix(ops, "ELECT") == 1, ops
    assert tools.count_prefix(ops, "FENCE.VIEW.ASYNC.S") >= 1, ops


@pytest.mark.parametrize("n", HEADER_N)
def test_wgmma_wrappers_become_hgmma_and_qgmma(cache_dir, n):
    mod = rt.compile(wgmma_smoke(n), arch="sm_90a", name=f"wgmma_n{n}.cu")
    res = mod.resources[f"wgmma_n{n}"]
    assert not res.spills and res.stack_frame_bytes == 0, res
    ops = _sass_or_skip(mod.cubin)
    hgmma = {op: c for op, c in ops.items() if op.startswith("HGMMA")}
    qgmma = {op: c for op, c in ops.items() if op.startswith("QGMMA")}
    tf32 = {op: c for op, c in hgmma.items() if ".TF32" in op}
    assert sum(hgmma.values()) == 6 and all(f".64x{n}x16.F32" in op for op in hgmma if op not in tf32), hgmma
    assert sum(c for op, c in hgmma.items() if ".BF16" in op) == 2, hgmma
    assert sum(tf32.values()) == 2 and all(op.startswith(f"HGMMA.64x{n}x8.F32.TF32") for op in tf32), hgmma
    assert sum(qgmma.values()) == 8 and all(f".64x{n}x32.F32" in op for op in qgmma), qgmma
    assert ops["WARPGROUP.ARRIVE"] == 1 and ops["WARPGROUP.DEPBAR.LE"] == 1, ops
    # the template immediates reach the hardware: B transposed for the 16-bit ones, negated for fp8 and
    # tf32 ss
    text = tools.sass(mod.cubin)
    assert len(re.findall(r"HGMMA\.[^;]*gdesc\[\w+\]\.tnspB", text)) == 4
    assert len(re.findall(r"QGMMA\.[^;]*gdesc\[\w+\]\.negB", text)) == 4
    assert len(re.findall(r"HGMMA\.[^;]*\.TF32[^;]*gdesc\[\w+\]\.negB", text)) == 1


def test_header_refuses_pre_hopper_targets():
    with pytest.raises(rt.CompileError, match="compile with arch='sm_90a'"):
        rt.compile(ASYNC_SMOKE, arch="sm_80", cache=False)


def test_wgmma_and_setmaxnreg_need_the_a_target():
    # TMA and mbarriers assemble for plain sm_90 ...
    tma_only = ASYNC_SMOKE.replace("tc::setmaxnreg_dec<40>();", "").replace("tc::setmaxnreg_inc<232>();", "")
    assert rt.compile(tma_only, arch="sm_90", cache=False).kernel_names == ("async_smoke",)
    # ... wgmma and setmaxnreg need sm_90a, and ptxas's refusal names the instruction and the source line
    with pytest.raises(rt.CompileError, match="wgmma") as e:
        rt.compile(wgmma_smoke(64), arch="sm_90", cache=False)
    assert e.value.arch == "sm_90"
    with pytest.raises(rt.CompileError, match="setmaxnreg"):
        rt.compile(ASYNC_SMOKE, arch="sm_90", cache=False)


def test_gpu_test_kernels_compile_without_spills(cache_dir):
    """The kernels test_sm90_gpu launches build here, so a GPU run never meets a compile error."""
    import gpu_kernels

    mod = rt.compile(gpu_kernels.SOURCE, arch="sm_90a", name="sm90_gpu_kernels.cu")
    assert set(mod.kernel_names) == {"tma_load_image", "tma_negate_roundtrip", "wgmma_m64n128_f16",
                                     "tma_multicast_image"}
    assert not any(r.spills or r.stack_frame_bytes for r in mod.resources.values()), mod.resources
    for name in mod.kernel_names:  # the launcher can read every signature
        assert mod.kernel(name).params
    if tools.nvdisasm() is not None:
        ops = tools.opcodes(tools.sass(mod.cubin))
        assert ops["HGMMA.64x128x16.F32"] >= 2, ops
