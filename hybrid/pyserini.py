"""``python -m hybrid.pyserini``: the command lives in :mod:`hybrid.cli.pyserini`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.pyserini import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
