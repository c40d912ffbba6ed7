"""``python -m hybrid.artifacts``: the command lives in :mod:`hybrid.cli.artifacts`."""

import sys

from hybrid.cli.artifacts import main
from hybrid.cli.common import run_cli

if __name__ == "__main__":
    sys.exit(run_cli(main))
