"""``python -m hybrid.eval``: the command lives in :mod:`hybrid.cli.eval`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.eval import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
