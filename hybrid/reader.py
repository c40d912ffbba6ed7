"""``python -m hybrid.reader``: the command lives in :mod:`hybrid.cli.reader`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.reader import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
