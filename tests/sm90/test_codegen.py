"""The generated wgmma header is what the generator makes, and other N are emitted on demand."""
from __future__ import annotations

import pytest

import sm90_tools as tools
import tilecraft.runtime as rt
from tilecraft.atoms.sm90_codegen import HEADER_N, WGMMA_TYPE_PAIRS, header_path, header_text, wgmma_name, wgmma_wrappers


def test_checked_in_header_is_the_generators_output():
    assert header_path().read_text() == header_text(), "run: python -m tilecraft.atoms.sm90_codegen"


def test_names():
    assert wgmma_name(128, "f16", "f16", "ss") == "wgmma_m64n128k16_f32_f16_f16_ss"
    assert wgmma_name(256, "e4m3", "e5m2", "rs") == "wgmma_m64n256k32_f32_e4m3_e5m2_rs"
    assert wgmma_name(192, "tf32", "tf32", "ss") == "wgmma_m64n192k8_f32_tf32_tf32_ss"
    for bad in [(0, "f16", "f16", "ss"), (12, "f16", "f16", "ss"), (264, "f16", "f16", "ss"),
                (64, "f16", "bf16", "ss"), (64, "tf32", "f16", "ss"), (64, "tf32", "e4m3", "ss"),
                (64, "f16", "f16", "sr")]:
        with pytest.raises(ValueError, match="wgmma"):
            wgmma_name(*bad)


EXTRA = r"""
#include <tilecraft/sm90.cuh>
extern "C" __global__ void __launch_bounds__(128, 1) extra(float* out, const tc::u64* desc) {
    tc::f32 d48[24], d64[32];
    tc::wgmma_fence();
    tc::wgmma_m64n48k16_f32_bf16_bf16_ss(d48, desc[0], desc[1], 0);
    tc::wgmma_m64n64k16_f32_f16_f16_ss(d64, desc[0], desc[1], 0);
    tc::wgmma_commit_group();
    tc::wgmma_wait_group<0>();
    for (int i = 0; i < 24; ++i) out[56 * threadIdx.x + i] = d48[i];
    for (int i = 0; i < 32; ++i) out[56 * threadIdx.x + 24 + i] = d64[i];
}
"""


def test_tf32_wrappers_have_no_transpose_immediates():
    """The PTX ISA gives wgmma .tf32 (and fp8) only scale-d, imm-scale-a and imm-scale-b: the wrappers take
    ScaleA / ScaleB and no TransA / TransB, and pass exactly two immediates after the predicate."""
    text = wgmma_wrappers([32])
    for ops, a_operands in (("ss", 1), ("rs", 4)):
        name = wgmma_name(32, "tf32", "tf32", ops)
        head, body = text.split(f" {name}(", 1)
        assert head.rsplit("\n", 2)[-2] == "template <int ScaleA = 1, int ScaleB = 1>"
        body = body.split("\n}\n", 1)[0]
        assert "Trans" not in body and "m64n32k8.f32.tf32.tf32" in body
        # 16 accumulators, A (descriptor or 4 registers), B, then p, ScaleA, ScaleB
        first_imm = 16 + a_operands + 2
        assert f"p, %{first_imm}, %{first_imm + 1};" in body
        assert '"r"(scale_d), "n"(ScaleA), "n"(ScaleB));' in body


@pytest.mark.parametrize("before", [True, False])
def test_other_n_emitted_at_compile_time(before):
    assert 48 not in HEADER_N and 64 in HEADER_N
    extra = wgmma_wrappers([48, 64])  # 64 is in the header too: its guard makes the repeat harmless
    src = extra + EXTRA if before else EXTRA.replace("extern", extra + "\nextern", 1)
    mod = rt.compile(src, arch="sm_90a", cache=False)
    assert not mod.resources["extra"].spills
    if tools.nvdisasm() is None:
        pytest.skip("no nvdisasm")
    ops = tools.opcodes(tools.sass(mod.cubin))
    assert ops["HGMMA.64x48x16.F32.BF16"] == 1 and ops["HGMMA.64x64x16.F32"] == 1, ops


def test_every_wgmma_atom_names_a_wrapper_in_the_header():
    from tilecraft.atoms import wgmma_atom

    atoms = [wgmma_atom(n, a, b, operands=ops) for n in HEADER_N for a, b in WGMMA_TYPE_PAIRS for ops in ("ss", "rs")]
    assert all(atom.cxx.startswith("tc::wgmma_m64n") for atom in atoms)
    assert wgmma_atom(64, "tf32").cxx == "tc::wgmma_m64n64k8_f32_tf32_tf32_ss"
    assert wgmma_atom(64, "f16", c_type="f16").cxx == ""
    uses = "\n".join(f"    sink[{i}] = (void*)&{atom.cxx}<>;" for i, atom in enumerate(atoms))
    src = (f"#include <tilecraft/sm90.cuh>\n__device__ void* sink[{len(atoms)}];\n"
           f"extern \"C\" __global__ void names() {{\n{uses}\n}}\n")
    assert rt.compile(src, arch="sm_90a", cache=False).kernel_names == ("names",)
