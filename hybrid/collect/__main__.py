"""``python -m hybrid.collect``: the command lives in :mod:`hybrid.cli.collect`."""

import sys

from hybrid.cli.collect import main
from hybrid.cli.common import run_cli

if __name__ == "__main__":
    sys.exit(run_cli(main))
