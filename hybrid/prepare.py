"""``python -m hybrid.prepare``: the command lives in :mod:`hybrid.cli.prepare`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.prepare import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
