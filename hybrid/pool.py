"""``python -m hybrid.pool``: the command lives in :mod:`hybrid.cli.pool`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.pool import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
