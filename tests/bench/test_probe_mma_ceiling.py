"""benchmarks/probe_mma_ceiling.py: its kernels compile for sm_90a and sm_80 (NVRTC, no GPU needed) without
spills, and their main loops are what the docstring says: per k-tile of 4 k-blocks and warp, 128 HMMA.16816.F32
and, for the ldsm and stream probes, the GEMM's 32 ldmatrix.x4 (the barrier only in ldsm+bar and the stream
probes); regs issues no ldmatrix; the stream probes issue the GEMM's 12 16-byte cp.async per thread and k-tile."""
import pytest

pytest.importorskip("torch")
from benchmark_script import load_benchmark  # noqa: E402


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_probe_kernels_compile_without_spills(arch: str) -> None:
    m = load_benchmark("probe_mma_ceiling")
    mod = m.compile_probes(arch)
    kinds = [p for p, _, _ in m.PROBES.values()] + ["stream3", "stream4", "stream4s"]
    assert set(mod.kernel_names) == {f"{p}_{t}" for p in kinds for t in ("f16", "bf16")} | {"stream3_copy",
                                                                                            "stream4_copy"}
    for n in mod.kernel_names:
        r = mod.resources[n]
        assert r.spill_store_bytes == 0 and r.stack_frame_bytes == 0 and r.registers <= 255, (n, r)


def test_probe_main_loops() -> None:
    import re
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gemm"))
    import sass
    if sass.cuobjdump() is None:
        pytest.skip("no cuobjdump")
    m = load_benchmark("probe_mma_ceiling")
    text = sass.sass(m.compile_probes("sm_90a").cubin)
    for part in re.split(r"Function : ", text)[1:]:
        name = part.split()[0]
        if name.endswith("_copy"):
            mix = sass.loop_mix(part, "LDGSTS")
            assert (mix["HMMA"], mix["LDSM"], mix["LDGSTS"]) == (0, 0, 12), mix
            assert sum(x.startswith("BAR.SYNC") for x in sass.hottest_loop_body(part, "LDGSTS")) == 1
            continue
        body = sass.hottest_loop_body(part, "HMMA")
        mix = sass.loop_mix(part)
        # regs: ptxas unrolls its 2-k-block iteration twice, so one loop pass is 4 k-blocks like the others
        assert mix["HMMA"] == 128 and sum(x.startswith("HMMA.16816.F32") for x in body) == 128, (name, mix)
        assert mix["LDSM"] == (0 if name.startswith("regs") else 32), (name, mix)
        assert mix["LDGSTS"] == (12 if name.startswith("stream") else 0), (name, mix)
        assert any(x.startswith("BAR.SYNC") for x in body) == name.startswith(("ldsm_bar", "stream")), name
        hmma = [x for x in body if x.startswith("HMMA")]
        assert sum(".reuse" in x for x in hmma) >= 96, (name, "consecutive HMMAs share an operand")
