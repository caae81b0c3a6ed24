"""``python -m gemm_kernels COMMAND``: see ``gemm_kernels/cli/`` (one module per subcommand)."""
import sys

from gemm_kernels.cli import main

if __name__ == "__main__":
    sys.exit(main())
