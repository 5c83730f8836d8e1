"""SASS of a compiled kernel through cuobjdump (tilecraft.runtime.disasm finds one), and loop parsers."""
from __future__ import annotations

import re

from tilecraft.runtime.disasm import find_tool
from tilecraft.runtime.disasm import sass as _sass


def cuobjdump() -> str | None:
    """Path of a cuobjdump, or None."""
    return find_tool("cuobjdump")


def sass(cubin: bytes) -> str:
    """The cuobjdump disassembly of a cubin (the loop parsers below read its branch addresses)."""
    return _sass(cubin, "cuobjdump")


def count(text: str, opcode: str, prefix: bool = False) -> int:
    """How many instructions of the SASS are exactly `opcode` with its modifiers (e.g. 'LDS.128',
    'LDS' for the 32-bit one), or, with prefix, start with it ('LDL' counts LDL.LU too)."""
    end = r"[\s.]" if prefix else r"\s"
    return len(re.findall(rf"\*/\s+(?:@!?U?P\w+\s+)?{re.escape(opcode)}{end}", text))


#: integer / address arithmetic opcodes (vector and uniform datapaths) for per-loop instruction mixes
INTEGER_OPS = ("IADD", "IMAD", "LEA", "SHF", "SHL", "LOP", "SEL", "ISETP", "VIADD", "VIMNMX", "IMNMX", "MOV",
               "PRMT", "IABS", "UIADD", "UIMAD", "ULEA", "USHF", "ULOP", "USEL", "UISETP", "UMOV", "R2UR")


def _instructions(text: str) -> list[tuple[int, str]]:
    """(address, instruction without its predicate guard) of every instruction of the SASS, in order."""
    return [(int(a, 16), re.sub(r"^@!?U?P\w+\s+", "", ins.strip()))
            for a, ins in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", text)]


def hottest_loop_body(text: str, hot: str) -> list[str]:
    """Instructions (predicate guards stripped, NOPs dropped) of the backward-branch loop with the most `hot` (of
    loops with as many, the one whose back edge comes first: the innermost of nested ones)."""
    code = _instructions(text)
    best: list[str] = []
    for a, ins in code:
        m = re.search(r"BRA (0x[0-9a-f]+)", ins)
        if m and int(m.group(1), 16) < a:
            body = [x for b, x in code if int(m.group(1), 16) <= b <= a and not x.startswith("NOP")]
            if sum(x.startswith(hot) for x in body) > sum(x.startswith(hot) for x in best):
                best = body
    return best


def hottest_loop(text: str) -> tuple[int, int]:
    """(instructions, FFMA) of the backward-branch loop with the most FFMA (NOPs not counted)."""
    body = hottest_loop_body(text, "FFMA")
    return len(body), sum(bool(re.match(r"FFMA\b", x)) for x in body)


def loop_mix(text: str, hot: str = "HMMA") -> dict[str, int]:
    """Opcode classes of the backward-branch loop with the most `hot` instructions: HMMA, LDSM, LDGSTS,
    integer (INTEGER_OPS) and total (NOPs not counted)."""
    best = [x.split()[0] for x in hottest_loop_body(text, hot)]
    mix = {k: sum(o.startswith(k) for o in best) for k in ("HMMA", "LDSM", "LDGSTS")}
    mix["integer"] = sum(o.startswith(INTEGER_OPS) for o in best)
    mix["total"] = len(best)
    return mix


def load_use_distances(text: str, load: str = "LDS.128", hot: str = "FFMA") -> list[int]:
    """For each `load` in the loop with the most `hot` instructions: how many instructions later (around
    the loop's back edge) the first instruction reading one of its four destination registers comes."""
    body = hottest_loop_body(text, hot)
    out = []
    for i, ins in enumerate(body):
        if not ins.startswith(load + " "):
            continue
        first = int(re.match(r"\S+\s+R(\d+)", ins).group(1))
        dest = {f"R{first + j}" for j in range(4)}
        for d in range(1, len(body) + 1):
            later = body[(i + d) % len(body)]
            operands = later.split(None, 1)[1] if " " in later else ""
            stores = later.startswith(("ST", "LDGSTS", "BAR", "BRA"))
            sources = operands if stores else operands.split(",", 1)[-1] if "," in operands else ""
            if dest & set(re.findall(r"\bR\d+\b", sources)):
                out.append(d)
                break
    return out


def ffma_reads(text: str) -> dict[str, int]:
    """How the FFMAs of the SASS read their source registers. An operand comes from the reuse cache when
    the previous instruction had the same register in the same slot flagged ``.reuse`` (any other
    instruction in between clears the cache); the rest are register-file reads, in bank register % 2.
    Counts: ``ffma``, ``three`` (three register-file reads), ``three_same`` (all three in one bank),
    ``pair_same`` (exactly two reads, in one bank)."""
    counts = {"ffma": 0, "three": 0, "three_same": 0, "pair_same": 0}
    cached: dict[int, str] = {}
    for _, ins in _instructions(text):
        if not ins.startswith("FFMA "):
            if not ins.startswith("NOP"):
                cached = {}
            continue
        sources = [s.strip() for s in ins.split(None, 1)[1].split(",")[1:]]
        reads, flagged = [], {}
        for slot, s in enumerate(sources):
            r = re.match(r"-?\|?(R\d+)", s)
            if r is None:
                continue
            if cached.get(slot) != r.group(1):
                reads.append(int(r.group(1)[1:]))
            if ".reuse" in s:
                flagged[slot] = r.group(1)
        cached = flagged
        banks = [r % 2 for r in reads]
        counts["ffma"] += 1
        counts["three"] += len(reads) == 3
        counts["three_same"] += len(reads) == 3 and len(set(banks)) == 1
        counts["pair_same"] += len(reads) == 2 and banks[0] == banks[1]
    return counts
