"""Generates the wgmma wrappers of ``tilecraft/sm90_wgmma.cuh`` (and any other N on demand).

A warpgroup MMA ``wgmma.mma_async.sync.aligned.m64nNkK`` names every one of its N/2 accumulator
registers in the instruction, and inline asm cannot loop, so each N is its own function with its own
operand list: text that is generated, not written. Two ways to get it:

* the header ``tilecraft/sm90_wgmma.cuh`` (included by ``tilecraft/sm90.cuh``) ships the N values a
  GEMM tile uses (``HEADER_N``); it is this module's output, checked in so that a plain
  ``#include`` needs no Python, and a test keeps it equal to what this module generates;
  ``python -m tilecraft.atoms.sm90_codegen`` rewrites it;
* any other N (multiple of 8 up to 256): put ``wgmma_wrappers([N])`` in front of the kernel source
  (generated code does this). Each N's block is guarded by ``TC_WGMMA_N<N>``, so emitting an N the
  header also has is harmless in either order.

Per N there are fourteen functions, ``tc::wgmma_m64n<N>k<K>_f32_<A>_<B>_<ss|rs>``: A and B f16.f16 or
bf16.bf16 (K = 16), tf32.tf32 (K = 8) or any pair of e4m3/e5m2 (K = 32), with A from a shared-memory
descriptor (ss) or from four registers (rs), B always from a descriptor, accumulating in f32.
Immediate operands are template parameters: ``TransA``/``TransB`` (1 = the operand is MN-major in
shared memory; 16-bit types only, rs has no TransA: the PTX ISA gives tf32 and fp8 no imm-trans
operands, they are K-major) and ``ScaleA``/``ScaleB`` (1 or -1, negating the operand). The runtime
``scale_d`` is 0 to overwrite the accumulators (the first k-block) and 1 to accumulate. tf32 operands
are 32-bit words in memory (fp32 data): the tensor core reads the sign, exponent and top 10 mantissa
bits of each and ignores the rest.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from tilecraft.atoms.types import bits_of

__all__ = ["HEADER_N", "WGMMA_TYPE_PAIRS", "header_path", "header_text", "wgmma_name", "wgmma_wrappers"]

# The N of GEMM tiles (64x{64,128,192,256} per warpgroup, narrower ones for small or split tiles).
HEADER_N: tuple[int, ...] = (8, 16, 32, 64, 96, 128, 192, 256)
# (A, B) element types wgmma multiplies into f32. 16- and 32-bit pairs must match; 8-bit pairs may mix.
WGMMA_TYPE_PAIRS: tuple[tuple[str, str], ...] = (
    ("f16", "f16"), ("bf16", "bf16"), ("tf32", "tf32"),
    ("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3"), ("e5m2", "e5m2"),
)


def _k(a_type: str) -> int:
    """K of one instruction: 256 bits of A's element type (as wgmma_atom computes it)."""
    return 256 // bits_of(a_type)


def header_path() -> Path:
    """The checked-in generated header, ``tilecraft/include/tilecraft/sm90_wgmma.cuh``."""
    return Path(__file__).resolve().parent.parent / "include" / "tilecraft" / "sm90_wgmma.cuh"


def wgmma_name(n: int, a_type: str, b_type: str, operands: str) -> str:
    """The C++ name (without ``tc::``) of the wrapper for m64n<n> with A/B types and "ss"/"rs"."""
    _check(n, a_type, b_type, operands)
    return f"wgmma_m64n{n}k{_k(a_type)}_f32_{a_type}_{b_type}_{operands}"


def _check(n: int, a_type: str, b_type: str, operands: str) -> None:
    if not (isinstance(n, int) and n % 8 == 0 and 8 <= n <= 256):
        raise ValueError(f"wgmma: N must be a multiple of 8 in [8, 256], got {n!r}")
    if (a_type, b_type) not in WGMMA_TYPE_PAIRS:
        raise ValueError(f"wgmma: no f32-accumulating wrapper for A={a_type}, B={b_type}; "
                         f"pairs: {WGMMA_TYPE_PAIRS}")
    if operands not in ("ss", "rs"):
        raise ValueError(f"wgmma: operands must be 'ss' or 'rs', got {operands!r}")


def _operand_list(first: int, count: int) -> str:
    return ", ".join(f"%{first + i}" for i in range(count))


def _wrapper(n: int, a_type: str, b_type: str, operands: str) -> str:
    name = wgmma_name(n, a_type, b_type, operands)
    nd = n // 2  # f32 accumulators per thread: 64 x N over 128 threads
    sixteen_bit = _k(a_type) == 16
    ptx = f"wgmma.mma_async.sync.aligned.m64n{n}k{_k(a_type)}.f32.{a_type}.{b_type}"
    if operands == "ss":
        a_asm, a_param, a_in, nxt = f"%{nd}", "u64 desc_a", '"l"(desc_a)', nd + 1
    else:
        a_asm = "{" + _operand_list(nd, 4) + "}"
        a_param, a_in, nxt = "const u32 (&a)[4]", ", ".join(f'"r"(a[{i}])' for i in range(4)), nd + 4
    b_asm, scale_d = f"%{nxt}", nxt + 1
    # Transposes exist for 16-bit types only, and for A only when A is in shared memory.
    trans = (["TransA", "TransB"] if operands == "ss" else ["TransB"]) if sixteen_bit else []
    imms = ["ScaleA", "ScaleB"] + trans  # the instruction's order after the scale-d predicate
    tparams = [f"int {t} = 0" for t in trans] + ["int ScaleA = 1", "int ScaleB = 1"]
    imm_asm = ", ".join(f"%{scale_d + 1 + i}" for i in range(len(imms)))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(nd))
    ins = ", ".join([a_in, '"l"(desc_b)', '"r"(scale_d)'] + [f'"n"({t})' for t in imms])
    asserts = "    static_assert((ScaleA == 1 || ScaleA == -1) && (ScaleB == 1 || ScaleB == -1), \"scales are +-1\");\n"
    if trans:
        asserts += f"    static_assert({' && '.join(f'({t} == 0 || {t} == 1)' for t in trans)}, " \
                   "\"transposes are 0 (K-major) or 1 (MN-major)\");\n"
    return (
        f"template <{', '.join(tparams)}>\n"
        f"TC_DEVICE void {name}(f32 (&d)[{nd}], {a_param}, u64 desc_b, u32 scale_d) {{\n"
        f"{asserts}"
        f"    asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{scale_d}, 0;\\n\"\n"
        f"                 \"{ptx} {{{_operand_list(0, nd)}}}, {a_asm}, {b_asm}, p, {imm_asm};\\n}}\\n\"\n"
        f"                 : {outs}\n"
        f"                 : {ins});\n"
        f"}}\n"
    )


def wgmma_wrappers(ns: Iterable[int]) -> str:
    """C++ text defining, in namespace tc, the fourteen wgmma wrappers of each N in `ns` (see module doc).

    Self-contained (it includes ``tilecraft/tilecraft.cuh`` for the types) and guarded per N, so it can
    be put before or after ``#include <tilecraft/sm90.cuh>`` in a kernel source.
    """
    ns = list(ns)
    for n in ns:
        _check(n, "f16", "f16", "ss")
    parts = ["#include <tilecraft/tilecraft.cuh>\n", "namespace tc {\n"]
    for n in ns:
        parts.append(f"\n#ifndef TC_WGMMA_N{n}\n#define TC_WGMMA_N{n}\n")
        for a_type, b_type in WGMMA_TYPE_PAIRS:
            for operands in ("ss", "rs"):
                parts.append(_wrapper(n, a_type, b_type, operands))
        parts.append(f"#endif  // TC_WGMMA_N{n}\n")
    parts.append("\n}  // namespace tc\n")
    return "".join(parts)


def header_text() -> str:
    """The full text of ``sm90_wgmma.cuh``: the wrappers of every N in HEADER_N."""
    return (
        "// sm90_wgmma.cuh: GENERATED by `python -m tilecraft.atoms.sm90_codegen`; do not edit.\n"
        "// wgmma.mma_async wrappers, f32 accumulators, for N in "
        f"{', '.join(map(str, HEADER_N))}; tilecraft/atoms/sm90_codegen.py says\n"
        "// how they are named and called, and how to get any other N.\n"
        "#pragma once\n\n" + wgmma_wrappers(HEADER_N)
    )


def main(argv: list[str] | None = None) -> int:
    """Write header_text() to header_path() (or to the path given as the only argument)."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else header_path()
    path.write_text(header_text())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
