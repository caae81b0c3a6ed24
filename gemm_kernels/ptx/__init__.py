"""Every PTX operation the kernels use, grouped by hardware unit. Each is a Numba intrinsic
(its PTX text in ``op.ptx``) with its emulator twin beside it (``op.twin``)."""
from ._declare import REGISTRY  # noqa: F401
from .address import cluster_ctarank, cluster_nctarank, globaltimer, mapa, shared_addr  # noqa: F401
from .fence import (fence_proxy_async, fence_proxy_tensormap_acquire, tcgen05_fence_after,  # noqa: F401
                    tcgen05_fence_before)
from .mbarrier import (fence_mbarrier_init, mbarrier_arrive, mbarrier_arrive_cluster,  # noqa: F401
                       mbarrier_arrive_expect_tx, mbarrier_arrive_expect_tx_cluster, mbarrier_arrive_remote, mbarrier_expect_tx, mbarrier_init, mbarrier_inval,
                       mbarrier_arrive_relaxed_cluster, mbarrier_try_wait, mbarrier_wait, mbarrier_wait_cluster,
                       mbarrier_wait_relaxed_cluster, mbarrier_wait_sleep, mbarrier_wait_sleep_relaxed_cluster)
from .tcgen05 import (tcgen05_commit, tcgen05_commit_cg2_multicast, tcgen05_mma, tcgen05_mma_cg2,  # noqa: F401
                      tcgen05_mma_cg2_lo, tcgen05_mma_lo,
                      tmem_alloc, tmem_alloc_cg2, tmem_dealloc, tmem_dealloc_cg2, tmem_ld_32x32b_x8,
                      tmem_ld_32x32b_x16, tmem_ld_32x32b_x32, tmem_ld_32x32b_x64, tmem_relinquish,
                      tmem_relinquish_cg2, tmem_wait_ld)
from .smem import st_shared_v4  # noqa: F401
from .clc import clc_query_cancel, clc_try_cancel_multicast  # noqa: F401
from .tma import (bulk_commit_group, bulk_wait_group_read0, bulk_wait_group_read1, bulk_wait_group_read2,  # noqa: F401
                  bulk_wait_group_read3, prefetch_tensormap, tma_load_2d,
                  tma_load_2d_cg2, tma_store_2d)
from .warp import (cluster_arrive, cluster_wait, elect_sync, named_barrier_arrive,  # noqa: F401
                   named_barrier_sync, pack_bf16x2, pack_f16x2, set_warp_role, warp_uniform)
from .probe import guard_note_base, guard_wait, guard_wait_cluster, timeline_stamp  # noqa: F401
from .tcgen05_lowp import (tcgen05_cp_32x128b_warpx4, tcgen05_cp_32x128b_warpx4_cg2,  # noqa: F401
                           tcgen05_mma_f8f6f4, tcgen05_mma_f8f6f4_cg2, tcgen05_mma_mxf4nvf4,
                           tcgen05_mma_mxf4nvf4_cg2, tcgen05_mma_mxf8f6f4, tcgen05_mma_mxf8f6f4_cg2)
