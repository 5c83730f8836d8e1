"""benchmarks/probe_read_floor.py: every read-only kernel it times compiles for sm_90a (NVRTC, no GPU needed),
without spills, and uses the instructions its docstring names."""
import pytest

pytest.importorskip("torch")
from benchmark_script import load_benchmark  # noqa: E402


def test_kernels_compile_for_sm90a():
    import tilecraft.runtime as rt
    from tilecraft.runtime.compiler import compile_ptx

    m = load_benchmark("probe_read_floor")
    mod = rt.compile(m.SOURCE, arch="sm_90a")
    names = set(mod.kernel_names)
    want = {f"ldg_{u}" for u in m.UNROLLS} | {f"{k}_{r}" for k in ("ring_cp", "ring_bulk", "cta_bulk") for r in m.RINGS}
    assert want | {f"bulk_{s}" for s in m.STAGES} == names
    for n in names:
        r = mod.resources[n]
        assert r.spill_store_bytes == 0 and r.stack_frame_bytes == 0, (n, r)
    ptx = compile_ptx(m.SOURCE, arch="sm_90a")
    for insn in ("griddepcontrol.wait", "griddepcontrol.launch_dependents", "cp.async.bulk.prefetch.L2.global",
                 "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", "cp.async.cg.shared.global",
                 "ld.global.cs"):
        assert insn in ptx, insn
