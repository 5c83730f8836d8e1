"""Seed 001's transpose: B = A^T as a ``copy`` between two views of the same (R, C) index space.

A (R, C) is row-major; B (C, R) is row-major too, so ``B.t()`` is an (R, C) tensor that is
column-major. Copying A into that view *is* the transpose. Each CTA takes one (TILE, TILE) tile of both
views (``local_tile``) and moves it through shared memory, so that both sides are coalesced 128-bit
accesses along their own contiguous mode:

* read: runs of 4 floats along A's contiguous mode c (LDG.128), stored to smem one float at a time;
* write: runs of 4 floats along B's contiguous mode r read from smem, stored with STG.128.

The smem tile is r-contiguous with an odd pitch (TILE + 1 floats), and a warp's lanes cover 8 runs x 4
lines on both sides, so the scalar smem accesses of a warp hit 32 different banks (pitch odd: lane
(t, l) lands in bank 4t + l + const mod 32) on the way in and on the way out.

Shapes that are multiples of the tile, with 16-byte aligned rows on both sides, take the unpredicated
kernel (``full``); all others trace the same kernel with identity-tensor predicates and scalar global
accesses.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tilecraft as tc
from tilecraft import dsl
from tilecraft.dsl import Constexpr, blockIdx, threadIdx
from tilecraft.dsl.partition import permute_modes, vector_permutation
from tilecraft.tensor import Tensor

__all__ = ["TransposeConfig", "CONFIGS", "transpose_kernel", "transpose_args", "transpose"]

VEC = 4  # floats per 128-bit access
_LANES_RUN, _LANES_LINE = 8, 4  # a warp: 8 runs of VEC along the contiguous mode x 4 lines


@dataclass(frozen=True)
class TransposeConfig:
    """A (tile, tile) CTA tile moved by ``threads`` threads."""

    tile: int = 64
    threads: int = 256

    @property
    def name(self) -> str:
        """A short label."""
        return f"t{self.tile}_n{self.threads}"

    def thread_layout(self) -> Any:
        """(RUN, LINE) -> thread: a warp covers 8 runs x 4 lines, warps cover the remaining runs, then lines."""
        runs = self.tile // VEC
        warps = self.threads // 32
        warps_run = runs // _LANES_RUN
        if self.tile % (VEC * _LANES_RUN) or warps % warps_run or self.tile % (_LANES_LINE * (warps // warps_run)):
            raise ValueError(f"{self}: a {self.tile}-wide tile does not split into warps of "
                             f"{_LANES_RUN} runs of {VEC} x {_LANES_LINE} lines among {self.threads} threads")
        return tc.make_layout(((_LANES_RUN, warps_run), (_LANES_LINE, warps // warps_run)),
                              ((1, 32), (_LANES_RUN, 32 * warps_run)))


#: The tilings the benchmark compares: 32x32 (one 128-bit access per thread and side), 64x64 (four,
#: more bytes in flight per CTA), 64x64 with 128 threads (eight per thread).
CONFIGS: dict[str, TransposeConfig] = {c.name: c for c in (
    TransposeConfig(32, 256), TransposeConfig(64, 256), TransposeConfig(64, 128),
)}
DEFAULT = TransposeConfig()


def _runs(x: Tensor, contiguous: int, thr: Any) -> Tensor:
    """Thread threadIdx.x's runs of a (TILE, TILE) tile along mode `contiguous`: (VEC, REPS)."""
    view = permute_modes(x, contiguous, 1 - contiguous)                   # (RUN_MODE, LINE_MODE)
    perm = (vector_permutation(tc.size(thr, 0), tc.size(view, 0), VEC), None)
    return tc.local_partition(tc.composition(view, perm), thr, threadIdx.x)  # (VEC, REPS)


@dsl.kernel
def transpose_kernel(A, Bt, cfg: Constexpr, full: Constexpr):
    """Bt (R,C) = A (R,C), with A row-major and Bt the column-major view of B = A^T (C,R)."""
    dsl.launch_bounds(cfg.threads)
    R, C = A.shape
    tiler = (cfg.tile, cfg.tile)                                          # (TILE_R, TILE_C)
    cta_coord = (blockIdx.y, blockIdx.x)                                  # (r, c): consecutive CTAs along A's rows
    gA = tc.local_tile(A, tiler, cta_coord)                               # (TILE_R,TILE_C) row-major
    gB = tc.local_tile(Bt, tiler, cta_coord)                              # (TILE_R,TILE_C) column-major
    sT = dsl.smem_tensor(dsl.float32, tc.make_layout(tiler, (1, cfg.tile + 1)))  # (TILE_R,TILE_C) r-contiguous, odd pitch
    thr = cfg.thread_layout()                                             # (RUN,LINE) -> thread

    tAgA = _runs(gA, 1, thr)                                              # (VEC,REPS) runs along c
    tAsT = _runs(sT, 1, thr)                                              # (VEC,REPS)
    tBsT = _runs(sT, 0, thr)                                              # (VEC,REPS) runs along r
    tBgB = _runs(gB, 0, thr)                                              # (VEC,REPS)
    rA = tc.make_fragment_like(tAsT)                                      # (VEC,REPS)
    rB = tc.make_fragment_like(tBsT)                                      # (VEC,REPS)

    if full:
        dsl.copy(tAgA, rA)                                                # every 128-bit load in flight first
        dsl.copy(rA, tAsT)
        dsl.syncthreads()
        dsl.copy(tBsT, rB)
        dsl.copy(rB, tBgB)
    else:
        cT = tc.local_tile(tc.make_identity_tensor((R, C)), tiler, cta_coord)  # (TILE_R,TILE_C) -> (r,c)
        dsl.copy_if(dsl.elem_less(_runs(cT, 1, thr), (R, C)), tAgA, rA)
        dsl.copy(rA, tAsT)
        dsl.syncthreads()
        dsl.copy(tBsT, rB)
        dsl.copy_if(dsl.elem_less(_runs(cT, 0, thr), (R, C)), rB, tBgB)


def _rows_ready(x: Any, unit: int) -> bool:
    """x's mode `unit` has stride 1, its other stride is a multiple of 4 floats, its data 16-byte aligned:
    every run of 4 along mode `unit` is one 128-bit access."""
    return x.stride(unit) == 1 and x.stride(1 - unit) % VEC == 0 and x.data_ptr() % 16 == 0


def transpose_args(A: Any, B: Any, cfg: TransposeConfig = DEFAULT) -> tuple[tuple, tuple, tuple]:
    """(args, grid, block) to launch transpose_kernel writing B (C,R) = A^T for A (R,C)."""
    R, C = A.shape
    Bt = B.t()
    full = R % cfg.tile == 0 and C % cfg.tile == 0 and _rows_ready(A, 1) and _rows_ready(Bt, 0)
    grid = (-(-C // cfg.tile), -(-R // cfg.tile))
    if grid[1] > 65535:
        raise ValueError(f"transpose: {R} rows need {grid[1]} CTA rows; the grid allows 65535")
    return (A, Bt, cfg, full), grid, (cfg.threads,)


def transpose(A: Any, out: Any = None, config: TransposeConfig = DEFAULT) -> Any:
    """B = A^T as a new contiguous (C, R) tensor (or into ``out``, a (C, R) float32 CUDA tensor).

    A is a 2-D float32 CUDA tensor with any strides (row-major gives 128-bit reads). Raises TypeError
    for other types and dtypes, ValueError for other ranks, devices or shapes.
    """
    import torch

    from tilecraft.gemm.simt import check_f32_matrix

    check_f32_matrix(A, "A", "transpose")
    R, C = A.shape
    if out is None:
        out = torch.empty((C, R), dtype=torch.float32, device=A.device)
    elif not isinstance(out, torch.Tensor) or out.dtype != torch.float32 or out.device != A.device \
            or tuple(out.shape) != (C, R):
        raise ValueError(f"transpose: out must be a ({C}, {R}) float32 tensor on {A.device}")
    for name, x in (("A", A), ("out", out)):
        span = sum((n - 1) * s for n, s in zip(x.shape, x.stride())) if x.numel() else 0
        if span >= 2**31:
            raise ValueError(f"transpose: {name} spans {span} elements; 32-bit offsets allow fewer than 2**31")
    if A.numel() == 0:
        return out
    args, grid, block = transpose_args(A, out, config)
    transpose_kernel[grid, block](*args)
    return out
