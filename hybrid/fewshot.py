"""``python -m hybrid.fewshot``: the command lives in :mod:`hybrid.cli.fewshot`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.fewshot import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
