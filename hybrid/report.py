"""``python -m hybrid.report``: the command lives in :mod:`hybrid.cli.report`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.report import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
