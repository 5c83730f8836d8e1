"""Hardware limits the GEMM configurations are checked against (no GPU needed): an sm_90 GPU's (H100, H200)
shared memory. The kernels' launches ask the driver for the actual GPU's limits where they differ."""

#: shared memory per SM on sm_90: 228 KB
SM_SMEM = 233472
#: what the driver reserves of it for each resident CTA
CTA_RESERVED_SMEM = 1024
#: the most shared memory one CTA may opt into: 227 KB
CTA_SMEM = SM_SMEM - CTA_RESERVED_SMEM
