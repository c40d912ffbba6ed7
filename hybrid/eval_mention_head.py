"""``python -m hybrid.eval_mention_head``: the command lives in :mod:`hybrid.cli.eval_mention_head`."""

import sys

from hybrid.cli.common import run_cli
from hybrid.cli.eval_mention_head import main

if __name__ == "__main__":
    sys.exit(run_cli(main))
