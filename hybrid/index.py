"""``python -m hybrid.index``: the command lives in :mod:`hybrid.cli.index`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.index import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
