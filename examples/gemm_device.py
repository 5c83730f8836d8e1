"""The CuTe tutorial SGEMM (seeds 002/003) in tilecraft: the host code that launches ``gemm_device``.

The kernel itself is ``tilecraft/gemm/simt.py`` (ported line for line from the C++). This file is the
tutorial's host side: gemm_nt / gemm_tn build the problem shape, the strides, the CTA tiler, the smem
and thread layouts, and launch one CTA per 128x128 tile of C. As in the C++, A, B and C are plain
buffers (pointers) and their strides say how to read them:

    python examples/gemm_device.py                      # 5120x5120x4096 NT on the GPU, checked and timed
    python examples/gemm_device.py -m 1000 -n 999 -k 77 --trans-a T
    python examples/gemm_device.py --source             # print the generated C++ (no GPU needed)
"""
from __future__ import annotations

import argparse
import time

import torch

import tilecraft as tc
from tilecraft.gemm.simt import gemm_device


def gemm_nt(M, N, K, alpha, A, ldA, B, ldB, beta, C, ldC, launch=True):
    """C = alpha * A * B^T + beta * C with A (M,K) m-major, B (N,K) n-major, C (M,N) m-major."""
    # Define shapes (dynamic)
    prob_shape = (M, N, K)                                                # (M, N, K)

    # Define NT strides (mixed: the unit stride is compiled as a static 1)
    dA = (1, ldA)                                                         # (dM, dK)
    dB = (1, ldB)                                                         # (dN, dK)
    dC = (1, ldC)                                                         # (dM, dN)

    # Define CTA tile sizes (static)
    bM, bN, bK = 128, 128, 8
    cta_tiler = (bM, bN, bK)                                              # (BLK_M, BLK_N, BLK_K)

    # Define the smem layouts (static)
    sA = tc.make_layout((bM, bK))                                         # (m,k) -> smem_idx; m-major
    sB = tc.make_layout((bN, bK))                                         # (n,k) -> smem_idx; n-major
    sC = tc.make_layout((bM, bN))                                         # (m,n) -> smem_idx; m-major

    # Define the thread layouts (static)
    tA = tc.make_layout((32, 8))                                          # (m,k) -> thr_idx
    tB = tc.make_layout((32, 8))                                          # (n,k) -> thr_idx
    tC = tc.make_layout((16, 16))                                         # (m,n) -> thr_idx

    args = (prob_shape, cta_tiler, A, dA, sA, tA, B, dB, sB, tB, C, dC, sC, tC, alpha, beta)
    if not launch:
        return gemm_device.source(*args)
    dimBlock = tc.size(tC)
    dimGrid = (tc.ceil_div(M, bM), tc.ceil_div(N, bN))
    gemm_device[dimGrid, dimBlock](*args)


def gemm_tn(M, N, K, alpha, A, ldA, B, ldB, beta, C, ldC, launch=True):
    """C = alpha * A^T * B + beta * C with A (M,K) k-major, B (N,K) k-major, C (M,N) m-major."""
    # Define shapes (dynamic)
    prob_shape = (M, N, K)                                                # (M, N, K)

    # Define TN strides (mixed)
    dA = (ldA, 1)                                                         # (dM, dK)
    dB = (ldB, 1)                                                         # (dN, dK)
    dC = (1, ldC)                                                         # (dM, dN)

    # Define CTA tile sizes (static)
    bM, bN, bK = 128, 128, 8
    cta_tiler = (bM, bN, bK)                                              # (BLK_M, BLK_N, BLK_K)

    # Define the smem layouts (static)
    sA = tc.make_layout((bM, bK), tc.LayoutRight)                         # (m,k) -> smem_idx; k-major
    sB = tc.make_layout((bN, bK), tc.LayoutRight)                         # (n,k) -> smem_idx; k-major
    sC = tc.make_layout((bM, bN))                                         # (m,n) -> smem_idx; m-major

    # Define the thread layouts (static)
    tA = tc.make_layout((32, 8), tc.LayoutRight)                          # (m,k) -> thr_idx; k-major
    tB = tc.make_layout((32, 8), tc.LayoutRight)                          # (n,k) -> thr_idx; k-major
    tC = tc.make_layout((16, 16))                                         # (m,n) -> thr_idx; m-major

    args = (prob_shape, cta_tiler, A, dA, sA, tA, B, dB, sB, tB, C, dC, sC, tC, alpha, beta)
    if not launch:
        return gemm_device.source(*args)
    dimBlock = tc.size(tC)
    dimGrid = (tc.ceil_div(M, bM), tc.ceil_div(N, bN))
    gemm_device[dimGrid, dimBlock](*args)


def gemm(transA, transB, M, N, K, alpha, A, ldA, B, ldB, beta, C, ldC, launch=True):
    """BLAS-style dispatch, as in the tutorial: 'N','T' -> gemm_nt, 'T','N' -> gemm_tn."""
    if transA == "N" and transB == "T":
        return gemm_nt(M, N, K, alpha, A, ldA, B, ldB, beta, C, ldC, launch)
    if transA == "T" and transB == "N":
        return gemm_tn(M, N, K, alpha, A, ldA, B, ldB, beta, C, ldC, launch)
    raise ValueError(f"the tutorial implements NT and TN, not {transA}{transB}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-m", type=int, default=5120)
    p.add_argument("-n", type=int, default=5120)
    p.add_argument("-k", type=int, default=4096)
    p.add_argument("--trans-a", default="N", choices="NT")
    p.add_argument("--trans-b", default=None, choices="NT", help="default: the other of --trans-a")
    p.add_argument("--source", action="store_true", help="print the generated C++ and exit (no GPU needed)")
    args = p.parse_args()
    transA = args.trans_a
    transB = args.trans_b or ("T" if transA == "N" else "N")
    M, N, K = args.m, args.n, args.k
    alpha, beta = 1.0, 0.0
    # Column-major storage as in the tutorial: A is M x K ('N') or K x M ('T'), B is K x N ('N') or N x K ('T').
    ldA = M if transA == "N" else K
    ldB = K if transB == "N" else N
    ldC = M

    device = "cpu" if args.source else "cuda"
    h_A = torch.randn(M * K, device=device) if not args.source else torch.empty(M * K)
    h_B = torch.randn(N * K, device=device) if not args.source else torch.empty(N * K)
    h_C = torch.full((M * N,), -1.0, device=device)
    if args.source:
        print(gemm(transA, transB, M, N, K, alpha, h_A, ldA, h_B, ldB, beta, h_C, ldC, launch=False))
        return

    gemm(transA, transB, M, N, K, alpha, h_A, ldA, h_B, ldB, beta, h_C, ldC)  # compile and warm up
    torch.cuda.synchronize()
    # Check against float64: A as an (M,K) view, B as (N,K), C as (M,N), all from the column-major buffers.
    As = (h_A.view(K, M).t() if transA == "N" else h_A.view(M, K)).double()
    Bs = h_B.view(K, N).t().double() if transB == "T" else h_B.view(N, K).double()
    ref = alpha * As @ Bs.t()
    got = h_C.view(N, M).t().double()
    err = (got - ref).abs().max().item()
    bound = (K + 2) * 2.0**-24 * (As.abs() @ Bs.abs().t()).max().item()
    print(f"M={M} N={N} K={K} {transA}{transB}: max |error| = {err:.3e} (bound {bound:.3e})")

    iters = 10
    start = time.perf_counter()
    for _ in range(iters):
        gemm(transA, transB, M, N, K, alpha, h_A, ldA, h_B, ldB, beta, h_C, ldC)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - start) / iters * 1e3
    print(f"CUTE_GEMM:     [{2e-9 * M * N * K / (ms / 1e3):6.1f}]GFlop/s  ({ms:.4f})ms")
    if err > bound:
        raise SystemExit("FAILED: error above the float32 bound")


if __name__ == "__main__":
    main()
