"""``python -m hybrid.ltr``: the command lives in :mod:`hybrid.cli.ltr`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.ltr import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
