"""The sm80+ tensor-op GEMM (tilecraft/gemm/tensorop.py) and the GEMM API (tilecraft/gemm/op.py).

CPU: every configuration of the heuristic's table compiles for sm_80 and sm_90a without spills; the
SASS main loop has the expected HMMA / LDSM / LDGSTS counts per k-tile; the kernels run correctly in
the emulator (tests/gemm/emulate.py) on small odd shapes, all majors, epilogues, both split-K modes and
tf32, through tc.gemm itself (its launches redirected to the emulator); the API's errors.
GPU: a float64-checked fuzz of random shapes, majors, batch, epilogues and split-K modes.
"""
from __future__ import annotations

import os

import random
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import tilecraft as tc  # noqa: E402
from tilecraft.gemm import HEURISTIC_TABLE, GemmOp, TensorOpConfig  # noqa: E402
from tilecraft.gemm.tensorop import EpilogueSpec, tensorop_gemm_kernel  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import emulate  # noqa: E402
import sass  # noqa: E402

T = TensorOpConfig
SMALL = T(64, 64, 32, 2, 2, stages=3)


def _args(cfg: TensorOpConfig, n: int = 512, elem: str = "float16") -> tuple:
    """Kernel arguments of an n^3 unpredicated problem, A K-major, B N-major (the benchmark's)."""
    dt = torch.float32 if elem == "tf32" else getattr(torch, elem)
    A = torch.empty(1, n, n, dtype=dt)
    B = torch.empty(1, n, n, dtype=dt).transpose(1, 2)
    D = torch.empty(1, n, n, dtype=dt)
    W = flags = None
    if cfg.splits > 1 and cfg.split_mode == "parallel":
        W = torch.empty(cfg.splits, 1, n, n)
    elif cfg.splits > 1:
        W, flags = torch.empty(1, n, n), torch.zeros(1, (n // cfg.blk_m) * (n // cfg.blk_n), dtype=torch.int32)
    return (A, B, None, D, None, 1.0, 0.0, W, flags, cfg, elem, EpilogueSpec(), True)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_heuristic_table_compiles_without_spills(arch: str) -> None:
    for cfg in HEURISTIC_TABLE.values():
        r = tensorop_gemm_kernel.compile(*_args(cfg), arch=arch).resources
        assert r.spills == 0 and r.stack_frame_bytes == 0, (cfg.name, arch, r)
        assert r.registers <= 255


@pytest.mark.skipif(sass.cuobjdump() is None, reason="no cuobjdump")
def test_main_loop_sass_per_k_tile() -> None:
    """128x128x32, 4 warps of 64x64: per k-tile and warp 4 x 8 x 2 = 64 HMMA.16816.F32, 8 + 8 ldmatrix.x4
    (B N-major: .trans), 4 + 4 16-byte cp.async, and nothing spilled."""
    k = tensorop_gemm_kernel.compile(*_args(T(128, 128, 32, 2, 2, stages=3)), arch="sm_90a")
    text = sass.sass(k.module.cubin if hasattr(k, "module") else k.cubin)
    code = [(int(a, 16), ins.strip()) for a, ins in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", text)]
    loops = []
    for a, ins in code:
        m = re.search(r"BRA (0x[0-9a-f]+)", ins)
        if m and int(m.group(1), 16) < a:
            loops.append([x for b, x in code if int(m.group(1), 16) <= b <= a])
    body = max(loops, key=lambda b: sum("HMMA" in x for x in b))
    count = lambda op: sum(bool(re.match(rf"(?:@!?U?P\w+\s+)?{re.escape(op)}\b", x)) for x in body)  # noqa: E731
    assert count("HMMA.16816.F32") == 64
    assert count("LDSM.16.M88.4") == 8 and count("LDSM.16.MT88.4") == 8
    assert sum(x.startswith("LDGSTS") for x in body) == 8
    assert sass.count(text, "LDL", prefix=True) == 0 and sass.count(text, "STL", prefix=True) == 0


#: the opt-in variants on the benchmark's best tilings (their defaults compile above through the table)
VARIANTS = [T(128, 256, 32, 2, 4, stages=4, lean_loop=True, smem_epilogue=True),
            T(128, 128, 64, 2, 2, stages=3, lean_loop=True), T(256, 128, 64, 4, 2, stages=3, smem_epilogue=True)]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_variants_compile_without_spills(arch: str) -> None:
    for cfg in VARIANTS:
        r = tensorop_gemm_kernel.compile(*_args(cfg), arch=arch).resources
        assert r.spills == 0 and r.stack_frame_bytes == 0 and r.registers <= 255, (cfg.name, arch, r)


@pytest.mark.skipif(sass.cuobjdump() is None, reason="no cuobjdump")
def test_lean_loop_has_fewer_integer_instructions() -> None:
    """Same HMMA / LDSM / LDGSTS per k-tile; the lean loop drops the modulo, clamp and multiplies
    (128x128x32, 3 stages, sm_90a: 56 -> 47 integer instructions per k-tile when written)."""
    mixes = {}
    for lean in (False, True):
        k = tensorop_gemm_kernel.compile(*_args(T(128, 128, 32, 2, 2, stages=3, lean_loop=lean)), arch="sm_90a")
        mixes[lean] = sass.loop_mix(sass.sass(k.module.cubin if hasattr(k, "module") else k.cubin))
    old, new = mixes[False], mixes[True]
    assert (new["HMMA"], new["LDSM"], new["LDGSTS"]) == (old["HMMA"], old["LDSM"], old["LDGSTS"]) == (64, 16, 8)
    assert new["integer"] <= old["integer"] - 6, (old, new)


@pytest.mark.skipif(sass.cuobjdump() is None, reason="no cuobjdump")
def test_smem_epilogue_stores_16_bytes() -> None:
    """128x128 tile, 128 threads, fp16 D: 64 32-bit STS per thread (conflict-free padded rows), then 16
    LDS.128 + 16 STG.E.128, instead of 64 32-bit STG straight from the fragments."""
    k = tensorop_gemm_kernel.compile(*_args(T(128, 128, 32, 2, 2, stages=3, smem_epilogue=True)), arch="sm_90a")
    text = sass.sass(k.module.cubin if hasattr(k, "module") else k.cubin)
    assert sass.count(text, "STG.E.128") == 16 and sass.count(text, "STG.E") == 0
    assert sass.count(text, "STS") == 64 and sass.count(text, "LDS.128") == 16


def test_single_k_block_tiles_are_rejected() -> None:
    with pytest.raises(ValueError, match="two MMA k-blocks"):
        T(64, 64, 16, 2, 2).validate(2)
    with pytest.raises(ValueError, match="two MMA k-blocks"):
        T(64, 64, 8, 2, 2).validate(4)


# ----------------------------------------------------------------------------- emulated, through tc.gemm

@pytest.fixture
def emulated(monkeypatch: Any) -> None:
    """tc.gemm on CPU tensors: launches go to the emulator, the device check is skipped."""
    emulate.route_launches(monkeypatch)
    monkeypatch.setattr(GemmOp, "_check_device", staticmethod(lambda A, B: None))


def _operand(L: int | None, R: int, C: int, last: bool, dt: Any, g: Any) -> Any:
    shape = (R, C) if last else (C, R)
    x = torch.randn(*((L,) + shape if L else shape), generator=g).to(dt)
    return x if last else x.transpose(-1, -2)


def _check(M: int, N: int, K: int, *, majors: str = "kk", dtype: Any = torch.float16, L: int | None = None,
           C: bool = False, alpha: float = 1.0, beta: float = 0.0, bias: str = "none", act: str = "none",
           out: Any = None, config: TensorOpConfig = SMALL, tf32: bool | None = None, tol: float = 2e-3) -> None:
    g = torch.Generator().manual_seed(M * 7 + N * 13 + K)
    A = _operand(L, M, K, majors[0] == "k", dtype, g)
    B = _operand(L, K, N, majors[1] != "k", dtype, g)
    Cm = torch.randn(*((L, M, N) if L else (M, N)), generator=g).to(out or dtype) if C else None
    b = torch.randn(N if bias == "n" else M, generator=g).to(dtype) if bias != "none" else None
    D = tc.gemm(A, B, Cm, alpha=alpha, beta=beta, bias=b, activation=act, out_dtype=out,
                bias_along=bias if bias != "none" else "n", config=config, allow_tf32=tf32)
    ref = alpha * (A.double() @ B.double())
    if C:
        ref = ref + beta * Cm.double()
    if b is not None:
        ref = ref + (b.double() if bias == "n" else b.double()[:, None])
    ref = {"none": lambda v: v, "relu": torch.relu, "gelu": torch.nn.functional.gelu,
           "silu": torch.nn.functional.silu}[act](ref)
    assert D.dtype == (out or dtype) and D.shape == ref.shape
    err = float((D.double() - ref).norm() / ref.norm())
    assert err < tol, err


def test_emulated_majors_and_edges(emulated: None) -> None:
    _check(64, 64, 64, majors="kk")                      # full tiles, no predicates
    _check(70, 50, 90, majors="mm")                      # ragged in every dimension, both MN-major
    _check(13, 7, 5, majors="km", dtype=torch.bfloat16, tol=1.5e-2)


def test_emulated_epilogues_and_batch(emulated: None) -> None:
    _check(65, 63, 40, C=True, beta=1.0, bias="n", act="relu")
    _check(65, 63, 40, majors="mk", bias="m", act="gelu", dtype=torch.bfloat16, out=torch.float32, tol=1e-5)
    _check(30, 20, 24, L=2, C=True, alpha=0.5, beta=-1.25, act="silu")


def test_emulated_batch_times_a_shared_b_runs_as_one_gemm(emulated: None) -> None:
    """x (L, M, K) @ W (K, N), W 2-D or broadcast over the batch (stride 0): one GEMM of L * M rows (the plan's A is
    (L * M, K)), with C (L, M, N) read, a bias along N and an activation; a bias along M, a C broadcast over the batch
    or an A whose batch and rows do not merge keep the batched kernel. All against float64."""
    from tilecraft.gemm import op

    g = torch.Generator().manual_seed(3)
    L, M, N, K = 3, 20, 24, 40
    x = torch.randn(L, M, K, generator=g).half()
    w = torch.randn(K, N, generator=g).half()
    C = torch.randn(L, M, N, generator=g).half()
    b = torch.randn(N, generator=g).half()
    ref = 0.5 * (x.double() @ w.double()) - C.double() + b.double()
    tc.gemm.clear_plans()
    for W in (w, w.expand(L, K, N)):
        D = tc.gemm(x, W, C, alpha=0.5, beta=-1.0, bias=b, activation="relu", config=SMALL)
        assert D.shape == (L, M, N) and D.dtype == torch.float16
        assert float((D.double() - torch.relu(ref)).norm() / torch.relu(ref).norm()) < 2e-3
    assert {key[1][1] for key in op._RUNS} == {(L * M, K)}                # one plan, of the folded A
    bm = torch.randn(M, generator=g).half()
    x_cols = x.transpose(0, 1).contiguous().transpose(0, 1)                 # (L, M) do not merge
    for A, Cb, bias, along in ((x, None, bm, "m"), (x, C[0], None, "n"), (x_cols, None, None, "n")):
        D = tc.gemm(A, w, Cb, beta=1.0 if Cb is not None else 0.0, bias=bias, bias_along=along, config=SMALL)
        want = A.double() @ w.double() + (Cb.double() if Cb is not None else 0)
        want = want + (bias.double()[:, None] if bias is not None else 0)
        assert float((D.double() - want).norm() / want.norm()) < 2e-3
    assert {key[1][1] for key in op._RUNS} == {(L * M, K), (L, M, K)}
    with pytest.raises(ValueError, match="do not broadcast"):             # a shared B of another batch size
        tc.gemm(x, w.expand(2, K, N), config=SMALL)
    tc.gemm.clear_plans()


@pytest.mark.parametrize("config", [SMALL, T(64, 64, 32, 2, 2, stages=3, splits=3, split_mode="parallel"),
                                    T(64, 64, 32, 2, 2, stages=3, splits=3, split_mode="serial")],
                         ids=["plain", "parallel", "serial"])
def test_emulated_calls_of_one_signature_share_a_plan(emulated: None, config: TensorOpConfig) -> None:
    """tc.gemm prepares a call once per signature: a second call with other data, alpha, beta, C and bias
    values (same shapes, strides and alignment) reuses the plan and computes with its own operands; an
    operand at another alignment, a beta of 0 (C not read) or alpha 1 (not multiplied) prepares anew."""
    from tilecraft.gemm import op
    g = torch.Generator().manual_seed(5)

    def call(A: Any, B: Any, C: Any, alpha: float, beta: float, bias: Any) -> None:
        D = tc.gemm(A, B, C, alpha=alpha, beta=beta, bias=bias, activation="relu", config=config)
        ref = torch.relu(alpha * (A.double() @ B.double()) + beta * C.double() + bias.double())
        assert float((D.double() - ref).norm() / ref.norm()) < 2e-3

    def operands(off: int = 0) -> tuple[Any, ...]:
        A = torch.randn(40 * 96 + off, generator=g).half()[off:].view(40, 96)
        return (A, torch.randn(96, 72, generator=g).half(), torch.randn(40, 72, generator=g).half(),
                torch.randn(72, generator=g).half())

    A, B, C, bias = operands()
    call(A, B, C, 0.5, 1.0, bias)
    plans = len(op._RUNS)
    A2, B2, C2, bias2 = operands()
    call(A2, B2, C2, -2.0, 0.25, bias2)
    call(A, B2, C2, 3.0, -1.0, bias)
    assert len(op._RUNS) == plans
    A8, B8, C8, bias8 = operands(off=8)
    call(A8, B8, C8, 0.5, 1.0, bias8)                                 # a 16-byte aligned offset: same plan
    assert len(op._RUNS) == plans
    A1, B1, C1, bias1 = operands(off=1)
    call(A1, B1, C1, 0.5, 1.0, bias1)                                 # 2 bytes off: padded, a plan of its own
    call(A2, B2, C2, 1.0, 1.0, bias2)
    assert len(op._RUNS) == plans + 2


@pytest.mark.parametrize("mode", ["parallel", "serial"])
def test_emulated_split_k(emulated: None, mode: str) -> None:
    cfg = T(64, 64, 32, 2, 2, stages=3, splits=4, split_mode=mode)
    _check(70, 60, 300, majors="mm", C=True, beta=1.0, bias="n", act="relu", config=cfg)
    _check(40, 40, 32, config=cfg)                       # splits with no k-tiles


def test_emulated_lean_loop(emulated: None) -> None:
    """Rotating stages (2 and 4), running k-offsets, skipped prefetches, empty splits."""
    _check(64, 128, 256, majors="kk", config=T(64, 64, 64, 2, 2, stages=4, lean_loop=True))  # full tiles
    _check(70, 50, 90, majors="mm", config=T(64, 64, 32, 2, 2, stages=2, lean_loop=True))
    _check(70, 60, 300, majors="km", C=True, beta=1.0, bias="n", act="relu",
           config=T(64, 64, 32, 2, 2, stages=3, splits=4, split_mode="serial", lean_loop=True))


def test_emulated_smem_epilogue(emulated: None) -> None:
    """Staged through smem: whole tiles with C, bias and activation (both switches on), and a D stored
    M-major (through the kernel itself); ragged tiles take the register epilogue."""
    _check_staged_epilogue(T(64, 64, 32, 2, 2, stages=3, lean_loop=True, smem_epilogue=True), K=96)


def _check_staged_epilogue(se: TensorOpConfig, K: int) -> None:
    """Whole tiles through tc.gemm with C, bias and an activation (D N-major), a ragged shape (the register
    epilogue), and a D stored M-major through the kernel itself."""
    _check(64, 128, K, majors="km", C=True, beta=0.5, bias="m", act="gelu", config=se)
    _check(70, 56, 40, majors="mm", config=se)
    g = torch.Generator().manual_seed(K)
    A, B = torch.randn(1, 64, K, generator=g).half(), torch.randn(1, 128, K, generator=g).half()
    D = torch.zeros(1, 128, 64, dtype=torch.float16).transpose(1, 2)  # (1, M, N), M contiguous
    emulate.launch(tensorop_gemm_kernel, (2, 1, 1), se.threads, A, B, None, D, None, 1.0, 0.0, None, None, se,
                   "float16", EpilogueSpec(), True)
    ref = A[0].double() @ B[0].double().T
    assert float((D[0].double() - ref).norm() / ref.norm()) < 2e-3


def test_emulated_tf32_and_padding(emulated: None) -> None:
    _check(50, 70, 44, majors="km", dtype=torch.float32, tf32=True, tol=5e-3)
    # K = 37: not a multiple of 8 elements, so tc.gemm pads the operands (a copy) for the kernel
    _check(20, 24, 37, majors="kk")


# ----------------------------------------------------------------------------- sliced-K (warps_k > 1)

#: sliced-K tilings: two and four k-slices (256-byte k-tiles give four slices two k-blocks each)
SK2 = T(64, 64, 64, 2, 2, stages=3, warps_k=2)
SK4 = T(64, 64, 128, 2, 2, stages=2, warps_k=4)
SK4_TF32 = T(64, 64, 64, 2, 2, stages=3, warps_k=4)
SLICED = [SK2, SK4, T(64, 128, 64, 2, 2, stages=4, warps_k=2, lean_loop=True),
          T(128, 128, 64, 2, 2, stages=3, warps_k=2, lean_loop=True, smem_epilogue=True),
          T(64, 64, 64, 2, 2, stages=3, warps_k=2, splits=3, split_mode="serial"),
          T(64, 64, 64, 2, 2, stages=3, warps_k=2, splits=3, split_mode="parallel")]


def test_sliced_k_partitions() -> None:
    """Thread t + s x 128 (k-slice s of 2x2 warps) accumulates exactly thread t's C coordinates, and the
    k-slices' A and B elements are disjoint along K and together cover the k-tile."""
    from tilecraft.gemm.tensorop import make_mma
    for cfg, elem in ((SK2, "float16"), (SK4, "float16"), (SK4_TF32, "tf32")):
        mma = make_mma(cfg, elem)
        per_slice = cfg.threads // cfg.warps_k
        cC = tc.make_identity_tensor((cfg.blk_m, cfg.blk_n))
        cA = tc.make_identity_tensor((cfg.blk_m, cfg.blk_k))
        cB = tc.make_identity_tensor((cfg.blk_n, cfg.blk_k))
        coords = lambda t: [t(i) for i in range(tc.size(t))]  # noqa: E731
        k_of = {"A": [set() for _ in range(cfg.warps_k)], "B": [set() for _ in range(cfg.warps_k)]}
        for t in range(per_slice):
            first = coords(mma.get_slice(t).partition_C(cC))
            for s in range(cfg.warps_k):
                thr = mma.get_slice(t + s * per_slice)
                assert thr.thr_vmnk[3] == s
                assert coords(thr.partition_C(cC)) == first, (cfg.name, t, s)
                k_of["A"][s] |= {k for _, k in coords(thr.partition_A(cA))}
                k_of["B"][s] |= {k for _, k in coords(thr.partition_B(cB))}
        for op, ks in k_of.items():
            assert set().union(*ks) == set(range(cfg.blk_k)), (cfg.name, op)
            assert sum(len(k) for k in ks) == cfg.blk_k, (cfg.name, op)           # disjoint
            assert all(len(k) == cfg.blk_k // cfg.warps_k for k in ks), (cfg.name, op)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_sliced_k_compiles_without_spills(arch: str) -> None:
    for cfg in SLICED:
        r = tensorop_gemm_kernel.compile(*_args(cfg), arch=arch).resources
        assert r.spills == 0 and r.stack_frame_bytes == 0, (cfg.name, arch, r)
        assert r.registers <= 65536 // cfg.threads, (cfg.name, arch, r)
    r = tensorop_gemm_kernel.compile(*_args(SK4_TF32, elem="tf32"), arch=arch).resources
    assert r.spills == 0 and r.stack_frame_bytes == 0, (arch, r)


def test_sliced_k_source() -> None:
    """The reduction: one smem buffer of max(pipeline, partials), k-slices 1..3 store 16-byte vectors,
    k-slice 0 loads them back (in slice order) and alone stores D; two barriers after the main loop."""
    for cfg, smem in ((SK4, (64 + 64) * 128 * 2 * 2), (T(128, 128, 64, 2, 2, stages=2, warps_k=4), 3 * 128 * 128 * 4)):
        assert cfg.smem_bytes(2) == smem
        spec = tensorop_gemm_kernel.specialize(*_args(cfg))
        assert spec.smem_bytes == smem and f"__launch_bounds__({cfg.threads}, 1)" in spec.source
    src = tensorop_gemm_kernel.source(*_args(SK4))                          # 128 threads per slice, 32 accumulators
    tail = src[src.index("const int k_slice = int(threadIdx.x) / 128;"):]
    assert "float* sR = reinterpret_cast<float*>(pipe);" in tail
    assert tail.count("__syncthreads();") == 2 and "tc::cp_async_wait<0>();" in tail
    stores = re.findall(r"\*reinterpret_cast<uint4\*>\(sR \+ thr \* 4 \+ \(k_slice - 1\) \* 4096(?: \+ (\d+))?\)", tail)
    assert [int(x or 0) for x in stores] == list(range(0, 4096, 512))  # a warp: 512 contiguous bytes per store
    loads = re.findall(r"reinterpret_cast<const uint4\*>\(sR \+ thr \* 4(?: \+ (\d+))?\);", tail)
    assert [int(x or 0) for x in loads] == list(range(0, 3 * 4096, 512))   # slices 1, 2, 3 in order
    leader = tail[tail.rindex("if (k_slice == 0) {"):]
    assert leader.count("*reinterpret_cast<unsigned*>(tCgD") == 16       # D: pairs of columns, k-slice 0 only
    assert tail.count("tCgD") == leader.count("tCgD") + 1                  # (+ its declaration)


def test_sliced_k_bad_tilings_are_rejected() -> None:
    with pytest.raises(ValueError, match="two MMA k-blocks per k-slice"):
        T(64, 64, 32, 2, 2, warps_k=2).validate(2)                        # one k-block per slice
    with pytest.raises(ValueError, match="two MMA k-blocks per k-slice"):
        T(64, 64, 32, 2, 2, warps_k=4).validate(4)                        # tf32: 32 = 4 slices of 8
    with pytest.raises(ValueError, match="warps_k must be >= 1"):
        T(64, 64, 64, 2, 2, warps_k=0).validate(2)
    with pytest.raises(ValueError, match="256 bytes"):
        T(64, 64, 256, 2, 2, stages=2, warps_k=2).validate(2)             # 512-byte k-tiles
    with pytest.raises(ValueError, match="32, 64 or 128 bytes"):
        T(64, 64, 128, 2, 2, stages=2).validate(2)                        # 256-byte k-tiles only for sliced-K
    with pytest.raises(ValueError, match="does not split into 16-byte copies among 512 threads"):
        T(32, 64, 64, 2, 4, warps_k=2).validate(2)                        # a 32x64 A tile has 256 vectors
    with pytest.raises(ValueError, match="1024"):
        T(128, 256, 128, 2, 4, stages=2, warps_k=8).validate(2)
    with pytest.raises(ValueError, match="bytes of smem exceed"):
        T(128, 256, 128, 2, 4, stages=2, warps_k=4).validate(2)           # 3 fp32 128x256 partial tiles
    for cfg in SLICED:
        cfg.validate(2)
    SK4_TF32.validate(4)
    assert SK2.name == "64x64x64_w2x2_s3_wk2" and SK2.threads == 256 and SK4.threads == 512
    assert SK2.smem_bytes(2) == 128 * 64 * 2 * 3                           # the pipeline's (> 64x64 fp32)


def test_emulated_sliced_k(emulated: None) -> None:
    """Two and four k-slices: full tiles and ragged ones (predicated), every major pair, the epilogue
    (alpha, beta C, bias along N and M, activations), fp16, bf16 and tf32, a batch."""
    _check(64, 128, 256, majors="kk", config=SK2)                          # full tiles
    _check(70, 50, 300, majors="mm", C=True, alpha=0.5, beta=1.0, bias="n", act="relu", config=SK2)
    _check(64, 64, 512, majors="mk", config=SK4)                           # full tiles, 4 slices
    _check(65, 63, 200, majors="km", C=True, beta=-0.5, bias="m", act="gelu", config=SK4)
    _check(33, 70, 96, majors="kk", L=2, act="silu", dtype=torch.bfloat16, out=torch.float32, config=SK4, tol=1e-5)
    _check(50, 70, 100, majors="km", dtype=torch.float32, tf32=True, C=True, beta=1.0, bias="n", config=SK4_TF32,
           tol=5e-3)
    _check(64, 64, 128, majors="mm", dtype=torch.float32, tf32=True, config=T(64, 64, 32, 2, 2, warps_k=2),
           tol=5e-3)


@pytest.mark.parametrize("mode", ["parallel", "serial"])
def test_emulated_sliced_k_with_split_k(emulated: None, mode: str) -> None:
    """k-slices inside the CTA, splits across CTAs: only k-slice 0 writes the partials / takes its turn,
    all threads meet the semaphore's barriers; splits with no k-tiles included."""
    cfg = T(64, 64, 64, 2, 2, stages=3, warps_k=2, splits=3, split_mode=mode)
    _check(70, 60, 500, majors="mm", C=True, beta=1.0, bias="n", act="relu", config=cfg)
    _check(64, 64, 128, majors="kk", config=cfg)                          # full tiles, the third split empty
    _check(40, 72, 700, majors="km", config=T(64, 64, 128, 2, 2, stages=2, warps_k=4, splits=2, split_mode=mode,
                                                 lean_loop=True))


def test_emulated_sliced_k_smem_epilogue(emulated: None) -> None:
    """The staged epilogue behind the reduction (sD before the partials in the one buffer): whole tiles
    with C, bias and activation, D N-major (tc.gemm) and M-major (the kernel itself); ragged tiles take the
    register epilogue."""
    _check_staged_epilogue(T(64, 64, 64, 2, 2, stages=3, warps_k=2, lean_loop=True, smem_epilogue=True), K=192)


_ASAN_CASES = r"""
import sys, torch
sys.path.insert(0, "tests/gemm")
import emulate, test_tensorop as t
from tilecraft.gemm import GemmOp
class Patch:
    def setattr(self, obj, name, value): setattr(obj, name, value)
emulate.route_launches(Patch())
GemmOp._check_device = staticmethod(lambda A, B: None)
T = t.T
# ragged tiles reading C (beta != 0): sliced-K with the staged epilogue, and serial split-K's workspace
t._check(131, 70, 128, majors="kk", dtype=torch.float32, tf32=True, C=True, beta=0.5, act="silu",
         config=T(128, 64, 32, 2, 2, stages=4, warps_k=2, lean_loop=True, smem_epilogue=True), tol=5e-3)
t._check(70, 60, 200, majors="mm", C=True, beta=1.0, config=T(64, 64, 64, 2, 2, stages=3, splits=3, split_mode="serial"))
print("in bounds")
"""


def test_emulated_ragged_reads_stay_in_bounds() -> None:
    """Under AddressSanitizer (the emulator's kernels built with -fsanitize=address, the operands in
    ASan's heap), ragged tiles read C and the split-K workspace only inside (M, N): an unguarded read
    there was the GPU's intermittent illegal address in test_gpu_sliced_k."""
    import subprocess

    if not emulate.available():
        pytest.skip("no g++")
    lib = subprocess.run(["g++", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not lib or not Path(lib).is_file():
        pytest.skip("no libasan")
    env = {**os.environ, "TC_EMU_SANITIZE": "1", "LD_PRELOAD": lib, "ASAN_OPTIONS": "detect_leaks=0"}
    root = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-c", _ASAN_CASES], cwd=root, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and "in bounds" in r.stdout, (r.stdout[-2000:], r.stderr[-4000:])


# ----------------------------------------------------------------------------- API errors (CPU)

def test_can_implement_reasons() -> None:
    op = GemmOp("float16")
    A = torch.zeros(64, 64, dtype=torch.float16)
    ok, why = op.can_implement(A, A)
    assert not ok and "CUDA" in why
    ok, why = op.can_implement(A.float(), A.float())
    assert not ok and "float16" in why
    ok, why = GemmOp("float16", activation="tanh").can_implement(A, A)
    assert not ok and "activation" in why
    ok, why = GemmOp("float16", config=T(72, 128, 32, 2, 2)).can_implement(A, A)
    assert not ok and "multiples of 16" in why
    ok, why = GemmOp("float16", config=T(64, 64, 32, 2, 2, warps_k=2)).can_implement(A, A)
    assert not ok and "two MMA k-blocks per k-slice" in why
    ok, why = GemmOp("tf32", config=T(64, 64, 32, 2, 2, warps_k=4)).can_implement(A.float(), A.float())
    assert not ok and "two MMA k-blocks per k-slice" in why
    ok, why = GemmOp("float16", config=T(128, 256, 128, 2, 4, stages=2, warps_k=4)).can_implement(A, A)
    assert not ok and "smem" in why
    ok, why = GemmOp("float16", config=SK4).can_implement(A, A)             # a sound tiling: only the device is missing
    assert not ok and "CUDA" in why


def test_gemm_type_errors() -> None:
    A = torch.zeros(8, 8, dtype=torch.float16)
    with pytest.raises(TypeError, match="one dtype"):
        tc.gemm(A, A.float())
    with pytest.raises(TypeError, match="supports float16"):
        tc.gemm(A.to(torch.int32), A.to(torch.int32))
    with pytest.raises(TypeError, match="torch tensors"):
        tc.gemm([[1.0]], A)


def test_gemm_is_the_callable_package() -> None:
    import tilecraft.gemm
    assert tc.gemm is tilecraft.gemm and callable(tc.gemm)
    assert tc.GemmOp is GemmOp and tc.gemm.gemm.__module__ == "tilecraft.gemm.op"


def test_heuristic_picks() -> None:
    from tilecraft.gemm import pick_config
    assert pick_config(4096, 4096, 4096, 1, "float16", 132).name == "128x256x32_w2x4_s4_lean_se"
    skinny = pick_config(512, 512, 65536, 1, "float16", 132)
    assert skinny.splits >= 4 and skinny.split_mode == "parallel"
    assert pick_config(4096, 4096, 4096, 1, "tf32", 132).blk_n == 256


# ----------------------------------------------------------------------------- GPU fuzz

@pytest.mark.gpu
def test_gpu_fuzz() -> None:
    """Random M, N, K in 1..2000 (odd included), every major pair, batch, epilogues, split-K modes,
    against float64 (relative Frobenius error within the output type's tolerance)."""
    rng = random.Random(2026)
    tols = {torch.float16: 2e-3, torch.bfloat16: 1.5e-2, torch.float32: 1e-4}
    for i in range(24):
        dt = rng.choice([torch.float16, torch.bfloat16])
        M, N, K = (rng.randint(1, 2000) for _ in range(3))
        majors = rng.choice(["kk", "km", "mk", "mm"])
        L = rng.choice([None, None, 2])
        act = rng.choice(["none", "relu", "gelu", "silu"])
        bias = rng.choice(["none", "n", "m"])
        out = rng.choice([None, torch.float32])
        cfg = None
        if i % 4 == 3:
            cfg = T(128, 128, 32, 2, 2, stages=4, splits=rng.randint(2, 9), split_mode=rng.choice(["parallel", "serial"]))
        g = torch.Generator(device="cuda").manual_seed(i)
        A = _operand_gpu(L, M, K, majors[0] == "k", dt, g)
        B = _operand_gpu(L, K, N, majors[1] != "k", dt, g)
        C = torch.randn(*((L, M, N) if L else (M, N)), device="cuda", generator=g).to(out or dt)
        b = torch.randn(N if bias == "n" else M, device="cuda", generator=g).to(dt) if bias != "none" else None
        D = tc.gemm(A, B, C, alpha=1.5, beta=0.5, bias=b, activation=act, out_dtype=out,
                    bias_along=bias if bias != "none" else "n", config=cfg)
        ref = _reference_gpu(A, B, C, b, bias, act)
        err = float((D.double() - ref).norm() / ref.norm().clamp_min(1e-30))
        assert err < tols[out or dt], (i, M, N, K, majors, L, act, bias, out, cfg, err)


@pytest.mark.gpu
def test_gpu_batch_times_a_shared_b() -> None:
    """tc.gemm's own pick for x (L, M, K) @ W (K, N), folded into one GEMM of L * M rows: bf16 and fp16 with W
    row-major or an nn.Linear weight's transpose, broadcast over the batch or 2-D, with C, bias and activation;
    fp32 with TF32 off (the IEEE kernels: the GEMV at L * M <= 16 rows, else the SGEMM) and on. Against float64."""
    torch.manual_seed(11)
    cases = [(torch.bfloat16, None, 8, 64, 512, 256), (torch.float16, None, 4, 100, 384, 320),
             (torch.float32, False, 4, 4, 1000, 500), (torch.float32, False, 6, 20, 512, 256),
             (torch.float32, True, 3, 50, 256, 512)]
    for i, (dt, tf32, L, M, N, K) in enumerate(cases):
        x = torch.randn(L, M, K, device="cuda").to(dt)
        w = torch.randn(K, N, device="cuda").to(dt) if i % 2 else torch.randn(N, K, device="cuda").to(dt).t()
        W = w.expand(L, K, N) if i % 3 == 0 else w
        C = torch.randn(L, M, N, device="cuda").to(dt)
        ieee = dt == torch.float32 and not tf32                           # the IEEE kernels take no bias / activation
        b = None if ieee else torch.randn(N, device="cuda").to(dt)
        act = "none" if ieee else "gelu"
        D = tc.gemm(x, W, C, alpha=0.5, beta=1.0, bias=b, activation=act, allow_tf32=tf32)
        ref = 0.5 * (x.double() @ w.double()) + C.double() + (0 if ieee else b.double())
        ref = ref if ieee else torch.nn.functional.gelu(ref)
        assert D.shape == (L, M, N) and D.dtype == dt
        tol = 1e-5 if dt == torch.float32 and not tf32 else 5e-3
        assert float((D.double() - ref).norm() / ref.norm()) < tol, (i, dt)


@pytest.mark.gpu
def test_gpu_sliced_k() -> None:
    """Sliced-K tilings (2 and 4 k-slices, with split-K, lean loop, staged epilogue; fp16, bf16, tf32) on
    random shapes, majors and epilogues against float64; and the same bits on a second run (k-slice 0 adds
    the partials in a fixed order)."""
    rng = random.Random(77)
    cfgs = SLICED + [T(64, 64, 64, 2, 2, stages=3, warps_k=2, splits=4, split_mode="parallel"),
                     T(128, 64, 64, 2, 2, stages=4, warps_k=2, lean_loop=True, smem_epilogue=True)]
    tols = {torch.float16: 2e-3, torch.bfloat16: 1.5e-2, torch.float32: 5e-3}
    for i in range(3 * len(cfgs)):
        cfg = cfgs[i % len(cfgs)]
        dt = [torch.float16, torch.bfloat16, torch.float32][i % 3]
        if dt == torch.float32:                                           # tf32: half the k-tile elements
            cfg = replace(cfg, blk_k=cfg.blk_k // 2)
        M, N = rng.randint(1, 700), rng.randint(1, 700)
        K = rng.choice([rng.randint(1, 4000), 64 * rng.randint(1, 40)])
        if i % 4 == 0:                                                    # whole tiles: the unpredicated kernel
            M, N = cfg.blk_m * rng.randint(1, 5), cfg.blk_n * rng.randint(1, 5)
        majors = rng.choice(["kk", "km", "mk", "mm"])
        act = rng.choice(["none", "relu", "gelu", "silu"])
        bias = rng.choice(["none", "n", "m"])
        g = torch.Generator(device="cuda").manual_seed(100 + i)
        A = _operand_gpu(None, M, K, majors[0] == "k", dt, g)
        B = _operand_gpu(None, K, N, majors[1] != "k", dt, g)
        C = torch.randn(M, N, device="cuda", generator=g).to(dt)
        b = torch.randn(N if bias == "n" else M, device="cuda", generator=g).to(dt) if bias != "none" else None
        run = lambda: tc.gemm(A, B, C, alpha=1.5, beta=0.5, bias=b, activation=act,  # noqa: E731
                              bias_along=bias if bias != "none" else "n", config=cfg, allow_tf32=True)
        D = run()
        ref = _reference_gpu(A, B, C, b, bias, act)
        err = float((D.double() - ref).norm() / ref.norm().clamp_min(1e-30))
        assert err < tols[dt], (i, cfg.name, dt, M, N, K, majors, act, bias, err)
        assert torch.equal(run(), D), (i, cfg.name)


def _reference_gpu(A: Any, B: Any, C: Any, b: Any, bias: str, act: str) -> Any:
    """float64 act(1.5 A @ B + 0.5 C + bias along `bias`), the GPU tests' reference."""
    ref = 1.5 * (A.double() @ B.double()) + 0.5 * C.double()
    if b is not None:
        ref = ref + (b.double() if bias == "n" else b.double()[:, None])
    return {"none": lambda v: v, "relu": torch.relu, "gelu": torch.nn.functional.gelu,
            "silu": torch.nn.functional.silu}[act](ref)


def _operand_gpu(L: int | None, R: int, C: int, last: bool, dt: Any, g: Any) -> Any:
    shape = (R, C) if last else (C, R)
    x = torch.randn(*((L,) + shape if L else shape), device="cuda", generator=g).to(dt)
    return x if last else x.transpose(-1, -2)
