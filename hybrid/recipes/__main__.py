"""``python -m hybrid.recipes``: the command lives in :mod:`hybrid.cli.recipes`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.recipes import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
