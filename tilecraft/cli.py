"""The `tilecraft` command: demo, doctor, bench.

Each subcommand imports its layer only when it runs, so `tilecraft --help` stays fast.
"""
from __future__ import annotations

import argparse
import sys


def _demo(args: argparse.Namespace) -> int:
    from tilecraft.demo import run

    return run(gpu=not args.no_gpu)


def _doctor(args: argparse.Namespace) -> int:
    from tilecraft.runtime.doctor import run

    return run()


def _bench(args: argparse.Namespace) -> int:
    from tilecraft.bench.cli import run

    return run(args.bench_args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tilecraft", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="walk through the seeds' examples (and a GEMM vs cuBLAS on a GPU)")
    p.add_argument("--no-gpu", action="store_true", help="skip the GPU part even where a GPU exists")
    p.set_defaults(func=_demo)
    p = sub.add_parser("doctor", help="versions, device, cache; compile (and run) a test kernel")
    p.set_defaults(func=_doctor)
    p = sub.add_parser("bench", help="side-by-side benchmarks (see `tilecraft bench gemm --help`)", add_help=False)
    p.add_argument("bench_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=_bench)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
