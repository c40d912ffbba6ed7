"""``python -m hybrid.recipe_train``: the command lives in :mod:`hybrid.cli.recipe_train`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.recipe_train import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
