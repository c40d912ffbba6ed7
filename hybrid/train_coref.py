"""``python -m hybrid.train_coref``: the command lives in :mod:`hybrid.cli.train_coref`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.train_coref import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
