"""``python -m hybrid.compare``: the command lives in :mod:`hybrid.cli.compare`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.compare import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
