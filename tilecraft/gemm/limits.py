"""Hardware limits the GEMM configurations are checked against without a GPU: an sm_90 GPU's (H100, H200)
shared memory. The small-M mixed kernel's pick asks the driver for the GPU's own per-CTA limit where there is
one (an A100 has 163 KB); the Hopper kernels run on sm_90 only."""

#: shared memory per SM on sm_90: 228 KB
SM_SMEM = 233472
#: what the driver reserves of it for each resident CTA
CTA_RESERVED_SMEM = 1024
#: the most shared memory one CTA may opt into: 227 KB
CTA_SMEM = SM_SMEM - CTA_RESERVED_SMEM
