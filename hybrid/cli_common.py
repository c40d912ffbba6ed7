"""Shared command-line plumbing: logging, clean error exits, version banner."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from hybrid.errors import ConfigError, IndexMissingError, InputError


def run_cli(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> int:
    """Run ``main``; user errors print one clear line and exit 2 (no traceback)."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for name in ("hybrid", "indexes", "features", "ltr"):
        logging.getLogger(name).setLevel(logging.INFO)
    try:
        return main(argv)
    except (InputError, ConfigError, IndexMissingError, FileExistsError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
