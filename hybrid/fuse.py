"""``python -m hybrid.fuse``: the command lives in :mod:`hybrid.cli.fuse`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.fuse import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
