"""atoms.cuh compiles for sm_80 and sm_90a (no GPU), and each wrapper becomes its instruction.

The PTX is read back from NVRTC; the SASS of the cubin rt.compile builds is read with nvdisasm when
one is installed (the nvidia-cuda-nvdisasm wheel, or the copy Triton ships).
"""
from __future__ import annotations

import re
from collections import Counter

import pytest

import tilecraft.runtime as rt
from tilecraft.runtime.disasm import find_tool
from tilecraft.runtime.disasm import sass as disassemble
from tilecraft.atoms import SM80_ATOMS, cp_async, ldmatrix, stmatrix, universal_copy

SMOKE = r"""
#include <tilecraft/atoms.cuh>
extern "C" __global__ void atoms_smoke(tc::f32* out, tc::i32* iout, const tc::u32* gin) {
    __shared__ __align__(128) tc::u32 smem[32 * 16];
    const tc::u32 s = tc::smem_u32(smem + 4 * threadIdx.x);
    const tc::u32* g = gin + 4 * threadIdx.x;
    tc::cp_async_ca_4(s, g);
    tc::cp_async_ca_8(s, g);
    tc::cp_async_ca_16(s, g);
    tc::cp_async_cg_16(s, g);
    tc::cp_async_ca_4_zfill(s, g, threadIdx.x & 4);
    tc::cp_async_ca_8_zfill(s, g, threadIdx.x & 8);
    tc::cp_async_ca_16_zfill(s, g, threadIdx.x & 16);
    tc::cp_async_cg_16_zfill(s, g, threadIdx.x & 16);
    tc::cp_async_commit();
    tc::cp_async_wait<0>();
    __syncthreads();
    tc::u32 a[4], at[4], b[2], bt[2], r, rt;  // every result is used, or ptxas drops the load
    tc::ldmatrix_x4(s, a[0], a[1], a[2], a[3]);
    tc::ldmatrix_x2(s, b[0], b[1]);
    tc::ldmatrix_x1(s, r);
    tc::ldmatrix_x4_trans(s, at[0], at[1], at[2], at[3]);
    tc::ldmatrix_x2_trans(s, bt[0], bt[1]);
    tc::ldmatrix_x1_trans(s, rt);
    tc::f32 c[4] = {0.f, 0.f, 0.f, 0.f}, d[4];
    tc::mma_m16n8k16_f32_f16(d, a, b, c);
    tc::mma_m16n8k16_f32_bf16(c, at, bt, d);
    tc::mma_m16n8k8_f32_tf32(d, a, bt, c);
#if __CUDA_ARCH__ >= 890
    tc::mma_m16n8k32_f32_e4m3(c, at, b, d);
    tc::mma_m16n8k32_f32_e4m3(d, a, b, c);
#endif
    tc::u32 h[2] = {r, rt};
    tc::mma_m16n8k16_f16_f16(h, a, b, h);
    tc::i32 ic[4] = {0, 0, 0, 0}, id[4];
    tc::mma_m16n8k32_s32_s8(id, at, bt, ic);
#if __CUDA_ARCH__ >= 900
    tc::stmatrix_x1(s, h[0]);
    tc::stmatrix_x2(s, h[0], h[1]);
    tc::stmatrix_x4(s, a[0], a[1], a[2], a[3]);
    tc::stmatrix_x1_trans(s, h[0]);
    tc::stmatrix_x2_trans(s, h[0], h[1]);
    tc::stmatrix_x4_trans(s, a[0], a[1], a[2], a[3]);
    tc::fence_proxy_async_shared();
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    tc::wgmma_fence();
    tc::wgmma_commit_group();
    tc::wgmma_wait_group<0>();
#endif
    tc::copy_b128(gin + 4 * threadIdx.x, smem + 4 * threadIdx.x);
    tc::copy_b64(gin + 2 * threadIdx.x, smem + 2 * threadIdx.x);
    tc::copy_b32(gin + threadIdx.x, smem + threadIdx.x);
    tc::copy_b16(gin + threadIdx.x, reinterpret_cast<tc::u16*>(smem) + threadIdx.x);
    tc::copy_b8(gin + threadIdx.x, reinterpret_cast<tc::u8*>(smem) + threadIdx.x);
    tc::fence_acq_rel_cta();
    __syncthreads();
    out[threadIdx.x] = d[0] + d[1] + d[2] + d[3] + c[0] + (tc::f32)h[0] + (tc::f32)smem[threadIdx.x];
    iout[threadIdx.x] = id[0] + id[1] + id[2] + id[3];
}
"""


def _ptx(arch: str) -> str:
    """The PTX NVRTC makes of SMOKE."""
    return rt.compile_ptx(SMOKE, arch=arch, name="smoke.cu")


# PTX text of each family of wrappers, and how often the smoke kernel issues it.
PTX_EXPECTED = {
    "sm_80": {
        "cp.async.ca.shared.global": 6, "cp.async.cg.shared.global": 2, "cp.async.commit_group": 1,
        "cp.async.wait_group 0": 1, "ldmatrix.sync.aligned.m8n8.x4.shared.b16": 1,
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16": 1, "ldmatrix.sync.aligned.m8n8.x2.shared.b16": 1,
        "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16": 1,
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32": 1,
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32": 1,
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32": 1,
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16": 1,
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32": 1,
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32": 0,
        "stmatrix": 0, "wgmma": 0,
    },
    "sm_90a": {
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32": 2,
        "stmatrix.sync.aligned.m8n8.x4.shared.b16": 1, "stmatrix.sync.aligned.m8n8.x1.trans.shared.b16": 1,
        "fence.proxy.async.shared::cta": 1, "wgmma.fence.sync.aligned": 1, "wgmma.commit_group.sync.aligned": 1,
        "wgmma.wait_group.sync.aligned 0": 1, "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16": 1,
    },
}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_wrappers_emit_their_ptx(arch):
    ptx = _ptx(arch)
    for text, count in PTX_EXPECTED[arch].items():
        assert ptx.count(text) == count, text


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_wrappers_assemble_to_cubins(cache_dir, arch):
    mod = rt.compile(SMOKE, arch=arch, name="atoms_smoke.cu")
    assert mod.kernel_names == ("atoms_smoke",)
    assert not mod.resources["atoms_smoke"].spills


def _atoms():
    return list(SM80_ATOMS) + [universal_copy(b) for b in (8, 16, 32, 64, 128)] + \
        [cp_async(n) for n in (4, 8, 16)] + [cp_async(n, zfill=True) for n in (4, 8, 16)] + \
        [cp_async(16, cache="global"), cp_async(16, cache="global", zfill=True)] + \
        [f(n, t) for f in (ldmatrix, stmatrix) for n in (1, 2, 4) for t in (False, True)]


def test_every_atom_names_a_wrapper_in_the_header(cache_dir):
    """Each atom's cxx names a device function of atoms.cuh: taking all their addresses compiles."""
    uses = "\n".join(f"    sink[{i}] = (void*)&{atom.cxx};" for i, atom in enumerate(_atoms()))
    src = f"#include <tilecraft/atoms.cuh>\n__device__ void* sink[{len(_atoms())}];\n" \
          f"extern \"C\" __global__ void names() {{\n{uses}\n}}\n"
    assert rt.compile(src, arch="sm_90a", name="names.cu").kernel_names == ("names",)


def test_every_atom_instruction_is_in_the_smoke_kernel_ptx():
    ptx = _ptx("sm_90a")
    for atom in _atoms():
        if atom.name.startswith("UniversalCopy"):
            continue  # plain C++ loads and stores: the compiler picks ld/st.v2/.v4
        assert atom.ptx.split(" ")[0] in ptx, atom.ptx


# SASS opcodes and how often the smoke kernel must contain them (LDGSTS.E.BYPASS is .cg).
SASS_EXPECTED = {
    "sm_80": {"LDGSTS.E": 2, "LDGSTS.E.64": 2, "LDGSTS.E.128": 2, "LDGSTS.E.BYPASS.128": 2,
              "LDSM.16.M88.4": 1, "LDSM.16.M88.2": 1, "LDSM.16.M88": 1, "LDSM.16.MT88.4": 1, "LDSM.16.MT88.2": 1,
              "LDSM.16.MT88": 1, "HMMA.16816.F32": 1, "HMMA.16816.F32.BF16": 1, "HMMA.1688.F32.TF32": 1,
              "HMMA.16816.F16": 1, "IMMA.16832.S8.S8": 1},
    "sm_90a": {"LDGSTS.E.BYPASS.128": 2, "LDSM.16.M88.4": 1, "STSM.16.M88": 1, "STSM.16.M88.2": 1,
               "STSM.16.M88.4": 1, "STSM.16.MT88": 1, "STSM.16.MT88.2": 1, "STSM.16.MT88.4": 1,
               "WARPGROUP.ARRIVE": 1, "WARPGROUP.DEPBAR.LE": 1, "IMMA.16832.S8.S8": 1},
}
_OPCODE = re.compile(r"\b((?:LDGSTS|LDSM|STSM|HMMA|IMMA|WARPGROUP)\.[.\w]+)")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_wrappers_become_their_sass(cache_dir, tmp_path, arch):
    if find_tool("nvdisasm") is None:
        pytest.skip("no nvdisasm (pip install nvidia-cuda-nvdisasm)")
    sass = disassemble(rt.compile(SMOKE, arch=arch, name="atoms_smoke.cu").cubin, "nvdisasm")
    found = Counter(_OPCODE.findall(sass))
    for opcode, count in SASS_EXPECTED[arch].items():
        assert found[opcode] == count, (opcode, arch, dict(found))
