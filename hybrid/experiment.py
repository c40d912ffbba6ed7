"""``python -m hybrid.experiment``: the command lives in :mod:`hybrid.cli.experiment`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.experiment import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
