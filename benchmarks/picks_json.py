#!/usr/bin/env python
"""Write a checkout's 16-bit Hopper picks at issue 8's 40 LLM shapes as JSON ({"MxNxK": "S(...)"}, S =
Sm90Config), for ``probe_llm.py --picks --baseline FILE``, which times them beside the current picks in one
process. Runs on the CPU; `--checkout` is another commit's tree:

    git worktree add /tmp/base REV && python3 benchmarks/picks_json.py picks_REV.json --checkout /tmp/base
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--checkout", default=str(HERE.parent), help="the tilecraft tree whose picks to write")
    p.add_argument("--sms", type=int, default=132)
    a = p.parse_args()
    sys.path.insert(0, a.checkout)
    from tilecraft.gemm import op                                         # the checkout's, imported first

    sys.path.insert(0, str(HERE))
    from probe_llm import LLM_SHAPES                                      # (its own path insert comes too late)

    if not Path(op.__file__).resolve().is_relative_to(Path(a.checkout).resolve()):
        raise SystemExit(f"tilecraft came from {op.__file__}, not from {a.checkout}")
    picks = {f"{m}x{n}x{k}": repr(op.pick_sm90_config(m, n, k, 1, a.sms)).replace("Sm90Config(", "S(")
             for m, n, k in LLM_SHAPES}
    Path(a.out).write_text(json.dumps(picks, indent=1) + "\n")
    print(f"{len(picks)} picks of {op.__file__} -> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
