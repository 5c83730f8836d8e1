"""Layer 3: the kernel language. ``@tc.kernel`` functions are traced into CUDA C++ (see kernel.py);
layouts, tilers and Python ints are compile-time, thread indices, extents, scalars and pointers are
symbolic expressions that print as C++ (expr.py), statements and control flow are recorded by the
trace (trace.py), memory is pointer and register engines under the ordinary tensors (memory.py), and
copy / gemm / axpby / clear / fill are CuTe's thread-level algorithms (algorithms.py).

Tracing never touches the GPU; launching goes through tilecraft.runtime.
"""
from tilecraft.dsl.algorithms import (
    arrive_last, atomic_add, axpby, clear, copy, copy_if, cp_async_commit, cp_async_wait, fill, flag_add_release,
    flag_count_reset, flag_release, flag_wait, flag_wait_at_least, gemm, load_cg, read_if,
    semaphore_release, semaphore_wait, vector_width,
)
from tilecraft.dsl.expr import BoolExpr, Expr, IntExpr, TraceError, Value, eq, ne, where
from tilecraft.dsl.kernel import Constexpr, Kernel, Specialization, kernel
from tilecraft.dsl.memory import (
    DType, as_dtype, bfloat16, bool_, convert, elem_less, float16, float32, float64, int8, int32, int64, make_gmem_ptr, make_rmem_tensor,
    make_smem_ptr, recast_smem, smem_tensor, uint8, uint32,
)
from tilecraft.dsl.partition import permute_modes, vector_permutation
from tilecraft.dsl.trace import (
    assign, assume, blockDim, blockIdx, break_, compiler_barrier, declare, else_, globaltimer, gridDim, if_, inline, launch_bounds, ptxas_options, range,
    shfl_xor, smid, syncthreads, syncwarp, threadIdx,
)

__all__ = [
    "arrive_last", "atomic_add", "axpby", "clear", "copy", "copy_if", "cp_async_commit", "cp_async_wait", "fill",
    "flag_add_release",
    "flag_count_reset", "flag_release", "flag_wait", "flag_wait_at_least", "gemm", "load_cg",
    "read_if", "semaphore_release", "semaphore_wait", "vector_width",
    "BoolExpr", "Expr", "IntExpr", "TraceError", "Value", "eq", "ne", "where",
    "Constexpr", "Kernel", "Specialization", "kernel",
    "DType", "as_dtype", "bfloat16", "bool_", "convert", "elem_less", "float16", "float32", "float64", "int8", "int32", "int64", "make_gmem_ptr",
    "make_rmem_tensor", "make_smem_ptr", "recast_smem", "smem_tensor", "uint8", "uint32",
    "assign", "assume", "blockDim", "blockIdx", "break_", "declare", "else_", "globaltimer", "gridDim", "if_", "inline", "launch_bounds", "ptxas_options", "range",
    "shfl_xor", "smid", "syncthreads", "syncwarp", "compiler_barrier", "threadIdx", "permute_modes", "vector_permutation",
]
