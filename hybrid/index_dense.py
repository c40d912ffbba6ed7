"""``python -m hybrid.index_dense``: the command lives in :mod:`hybrid.cli.index_dense`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.index_dense import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
