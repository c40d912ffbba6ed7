"""``python -m hybrid.data``: the command lives in :mod:`hybrid.cli.data`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.data import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
