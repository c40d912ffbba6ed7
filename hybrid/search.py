"""``python -m hybrid.search``: the command lives in :mod:`hybrid.cli.search`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.search import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
