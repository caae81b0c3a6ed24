"""Nine Blackwell (sm_100a) GEMM kernels in Numba-CUDA with inline PTX, and a CPU emulator
of the Blackwell units they use. See ARCHITECTURE.md at the repository root."""
