"""`tilecraft demo`: the seeds' examples, printed, with pictures; on a GPU machine, a GEMM against cuBLAS."""
from __future__ import annotations

import os
import tempfile

import tilecraft as tc


def _section(title: str) -> None:
    print()
    print(title)
    print("-" * len(title))


def _layouts(out: str) -> list[str]:
    _section("Layouts (seed 001): a layout maps coordinates to offsets")
    L = tc.Layout((8, (2, 2)), (2, (1, 16)))
    print(f"L = {L}")
    print(f"L(17) = {L(17)}   L(1,2) = {L(1, 2)}   L(1,(0,1)) = {L(1, (0, 1))}")
    sub, off = tc.slice_and_offset((3, tc._), L)
    print(f"L(3,_) = {sub} at offset {off}: offsets {[off + sub(i) for i in range(tc.size(sub))]}")
    tc.print_layout(tc.Layout((4, 8), (8, 1)))

    _section("The algebra")
    examples = [
        ("composition((6,2):(8,2), (4,3):(3,1))", tc.composition(tc.Layout((6, 2), (8, 2)), tc.Layout((4, 3), (3, 1)))),
        ("complement(4:2, 24)", tc.complement(tc.Layout(4, 2), 24)),
        ("logical_divide((4,2,3):(2,1,8), 4:2)", tc.logical_divide(tc.Layout((4, 2, 3), (2, 1, 8)), tc.Layout(4, 2))),
        ("zipped_divide((6,8):(8,1), (3,4))", tc.zipped_divide(tc.Layout((6, 8), (8, 1)), (3, 4))),
        ("blocked_product((3,4):(4,1), (2,5):(1,2))", tc.blocked_product(tc.Layout((3, 4), (4, 1)), tc.Layout((2, 5), (1, 2)))),
        ("raked_product((3,4):(4,1), (2,5):(1,2))", tc.raked_product(tc.Layout((3, 4), (4, 1)), tc.Layout((2, 5), (1, 2)))),
        ("idx2crd(16, (3,(2,3)))", tc.idx2crd(16, (3, (2, 3)))),
    ]
    width = max(len(a) for a, _ in examples)
    for text, value in examples:
        print(f"{text:<{width}}  ->  {tc.layout.inttuple.tuple_str(value) if isinstance(value, tuple) else value}")

    sw = tc.composition(tc.Swizzle(3, 3, 3), tc.Layout((8, 64), (64, 1)))
    raked = tc.raked_product(tc.Layout((3, 4), (4, 1)), tc.Layout((2, 5), (1, 2)))
    files = [
        tc.draw(raked).save(os.path.join(out, "raked_product.svg")),
        tc.draw(tc.Layout((8, 8), (1, 8))).save(os.path.join(out, "col_major_8x8.svg")),
        tc.draw_tv(tc.Layout((4, 2), (2, 1)), (8, 1)).save(os.path.join(out, "tv_layout.svg")),
    ]
    print(f"swizzled smem tile: {sw}")
    return files


def _tensors(out: str) -> list[str]:
    import numpy as np

    _section("local_tile (seed 000): an 8x8 column-major tensor, 4x4 tiles")
    A = tc.make_tensor(np.arange(64), tc.make_layout((8, 8)))
    tc.print_tensor(A)
    c = tc.local_tile(A, (4, 4), (0, 1))
    tc.print_tensor(c)
    print(f"cta_a((0,1)) = {c((0, 1))}   cta_a(2) = {c(2)}")
    all_tiles = tc.local_tile(A, (4, 4), (0, tc._))
    print(f"local_tile(A, (4,4), (0,_)) has shape {all_tiles.shape}; "
          f"tile 0 at (0,1) = {all_tiles(None, None, 0)((0, 1))}, at 2 = {all_tiles(None, None, 0)(2)}")
    B = tc.make_tensor(np.arange(64), tc.make_layout((8, 8), (8, 1)))
    print(f"row-major B, local_tile(B, (4,1,4), (0,0,_), Step<_1,X,_1>): "
          f"{tc.local_tile(B, (4, 1, 4), (0, 0, None), proj=(1, None, 1)).layout}")

    _section("local_partition (seed 000): 4 threads of a row-major 2x2 CTA over a 4x4 tile")
    A4 = tc.make_tensor(np.arange(16), tc.make_layout((4, 4), (4, 1)))
    tc.print_tensor(A4)
    cta = tc.make_layout((2, 2), tc.LayoutRight)
    tc.print_tensor(tc.local_partition(A4, cta, 1))

    _section("gemm_device partitions (seeds 002/003) for block (1,0), thread 37")
    M, N, K = 256, 256, 64
    mA = tc.make_tensor(np.arange(M * K), tc.make_layout((M, K)))
    gA = tc.local_tile(mA, (128, 128, 8), (1, 0, None), proj=(1, None, 1))
    tAgA = tc.local_partition(gA, tc.make_layout((32, 8)), 37)
    sA = tc.make_tensor(np.zeros(128 * 8, dtype=np.float32), tc.make_layout((128, 8)))
    tCsA = tc.local_partition(sA, tc.make_layout((16, 16)), 37, proj=(1, None))
    print(f"gA   = local_tile(mA, (128,128,8), (1,0,_), Step<_1,X,_1>)   {gA.layout}   # (BLK_M,BLK_K,k)")
    print(f"tAgA = local_partition(gA, (32,8), 37)                       {tAgA.layout}   # (THR_M,THR_K,k)")
    print(f"tCsA = local_partition(sA, (16,16), 37, Step<_1,X>)          {tCsA.layout}   # (THR_M,BLK_K)")

    files = [tc.draw_partition(A4, cta).save(os.path.join(out, "local_partition.svg"))]
    try:
        import matplotlib  # noqa: F401
        files.append(tc.draw_partition(A4, cta).save(os.path.join(out, "local_partition.png")))
    except ImportError:
        pass
    return files


def _gpu_part() -> None:
    try:
        import torch
    except ImportError:
        print("\n(no torch: skipping the GPU GEMM comparison)")
        return
    if not torch.cuda.is_available():
        print("\n(no CUDA GPU: skipping the GEMM comparison against cuBLAS)")
        return
    _section(f"GEMM on {torch.cuda.get_device_name()}: side by side with cuBLAS")
    from tilecraft.bench import demo_gemm
    demo_gemm()


def run(gpu: bool = True, out: str | None = None) -> int:
    """Run the demo; returns the process exit code."""
    out = out or os.path.join(tempfile.gettempdir(), "tilecraft-demo")
    os.makedirs(out, exist_ok=True)
    print(f"tilecraft {tc.__version__}: CuTe's vocabulary, in Python")
    files = _layouts(out) + _tensors(out)
    _section("Pictures")
    for f in files:
        print(f"  {f}")
    if gpu:
        _gpu_part()
    return 0
