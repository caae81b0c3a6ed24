"""The driver rules the fake applies, as cases: each is run against the fake (tests/test_fake_gpu.py)
and was run against a real driver on an H200 (tests/fake_gpu/record_h200.py ->
tests/data/fake_gpu_vs_h200.json); tests/test_fake_gpu.py checks the two give the same verdicts."""
from __future__ import annotations

# cuTensorMapEncodeTiled: a valid 256 x 128 fp16 map (box 128 x 64, 128B swizzle) with fields replaced;
# (name, changes, a fragment of the fake's refusal or None when the map is valid)
TENSOR_MAP_CASES = [
    ("valid", {}, None),
    ("stride not a multiple of 16", {"strides": [100]}, "multiple of 16"),
    ("stride of 2^40", {"strides": [2**40]}, "below 2^40"),
    ("box dim of 257", {"box": [64, 257]}, "1..256"),
    ("inner box wider than the swizzle", {"box": [72, 128]}, "wider than the CU_TENSOR_MAP_SWIZZLE_128B span"),
    ("inner box of 8 bytes", {"box": [4, 128], "swizzle": "CU_TENSOR_MAP_SWIZZLE_NONE"}, "multiple of 16 bytes"),
    ("element stride of 9", {"estrides": [1, 9]}, "element strides"),
    ("global dim of 0", {"dims": [128, 0]}, "1..2^32"),
    ("global address off by 8", {"address_offset": 8}, "16-byte aligned"),
    ("inner box of 64 B, 64B swizzle", {"box": [32, 128], "swizzle": "CU_TENSOR_MAP_SWIZZLE_64B"}, None),
    ("inner box of 128 B, 64B swizzle", {"box": [64, 128], "swizzle": "CU_TENSOR_MAP_SWIZZLE_64B"},
     "wider than the CU_TENSOR_MAP_SWIZZLE_64B span"),
]

# kernel launches of a 1-parameter kernel: (name, dict(grid, block, cluster, shmem, attr_smem,
# non_portable), a fragment of the fake's refusal or None when it launches). grid counts BLOCKS.
LAUNCH_CASES = [
    ("plain", dict(grid=(4, 1, 1), block=(128, 1, 1)), None),
    ("49153 B without the attribute", dict(grid=(1, 1, 1), block=(32, 1, 1), shmem=49153), "MAX_DYNAMIC_SHARED"),
    ("232448 B with the attribute", dict(grid=(1, 1, 1), block=(32, 1, 1), shmem=232448, attr_smem=232448), None),
    ("attribute of 232449 B", dict(grid=(1, 1, 1), block=(32, 1, 1), attr_smem=232449), "attribute"),
    ("cluster of 8", dict(grid=(8, 1, 1), block=(32, 1, 1), cluster=(8, 1, 1)), None),
    ("cluster of 16, portable", dict(grid=(16, 1, 1), block=(32, 1, 1), cluster=(16, 1, 1)),
     "CLUSTER_SIZE_NOT_SUPPORTED"),
    ("cluster of 16, non-portable", dict(grid=(16, 1, 1), block=(32, 1, 1), cluster=(16, 1, 1), non_portable=1),
     None),
    ("grid not a multiple of the cluster", dict(grid=(3, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1)),
     "INVALID_CLUSTER_SIZE"),
    ("block z of 65", dict(grid=(1, 1, 1), block=(32, 1, 65)), "block"),
    ("1025 threads", dict(grid=(1, 1, 1), block=(1025, 1, 1)), "block"),
    ("grid y of 65536", dict(grid=(1, 65536, 1), block=(32, 1, 1)), "grid"),
]

# cuOccupancyMaxActiveClusters: (block threads, dynamic smem, cluster size)
OCCUPANCY_CASES = [(128, 65564, 1), (256, 196708, 1), (256, 196708, 2), (384, 229476, 2), (128, 98340, 2),
                   (128, 32780, 2), (256, 100000, 2), (128, 1024, 4)]
