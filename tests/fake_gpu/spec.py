"""The device the fake GPU pretends to be: a B200 (compute capability 10.0) and the limits the real
driver enforces on it. Each number says where it comes from; the fake's checks read them from here.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceSpec:
    name: str = "NVIDIA B200 (fake)"
    compute_capability: tuple = (10, 0)
    sm_count: int = 148                      # B200: 148 SMs (shared/reference/published-b200-ladder.md)
    # per-block opt-in dynamic + static shared memory on sm_100: 227 KiB
    # (CUTLASS include/cutlass/arch/arch.h sm100_smem_capacity_bytes; shared/reference/blackwell-ptx-facts.md)
    max_shared_per_block_optin: int = 232448
    shared_per_sm: int = 233472              # 228 KiB per SM; the driver reserves 1 KiB per resident block
    reserved_shared_per_block: int = 1024
    default_dynamic_shared: int = 48 * 1024  # above this a kernel needs MAX_DYNAMIC_SHARED_SIZE_BYTES set
    max_threads_per_block: int = 1024
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    registers_per_sm: int = 65536
    max_block_dims: tuple = (1024, 1024, 64)
    max_grid_dims: tuple = (2**31 - 1, 65535, 65535)
    portable_cluster_size: int = 8           # cuda.h: CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
    max_cluster_size: int = 16               # with the non-portable attribute set
    l2_bytes: int = 126 * 2**20              # what the fake reports; tests check it is used, not its value
    total_memory: int = 180 * 2**30
    driver_version: int = 13000


B200 = DeviceSpec()
H200 = DeviceSpec(name="NVIDIA H200 (fake)", compute_capability=(9, 0), sm_count=132, l2_bytes=60 * 2**20,
                  total_memory=141 * 2**30)

# cuTensorMapEncodeTiled's rules (CUDA Driver API, Tensor Map Object Management; summarised in
# shared/reference/blackwell-ptx-facts.md section 10), for tensorRank <= 5 and interleave NONE
TMAP_MAX_RANK = 5
TMAP_GLOBAL_ALIGN = 16
TMAP_STRIDE_MULTIPLE = 16
TMAP_MAX_STRIDE = 2**40
TMAP_MAX_DIM = 2**32
TMAP_MAX_BOX = 256
TMAP_MAX_ELEMENT_STRIDE = 8
TMAP_SWIZZLE_SPAN = {"CU_TENSOR_MAP_SWIZZLE_NONE": 0, "CU_TENSOR_MAP_SWIZZLE_32B": 32,
                     "CU_TENSOR_MAP_SWIZZLE_64B": 64, "CU_TENSOR_MAP_SWIZZLE_128B": 128}
TMAP_BYTES = 128
