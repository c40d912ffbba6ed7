"""``python -m hybrid.regress``: the command lives in :mod:`hybrid.cli.regress`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.regress import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
