"""``python -m mnemetric.longmemeval.sample [options]``: the same command as ``mnemetric sample`` (mnemetric.cli.sample)."""

from __future__ import annotations

import sys

from mnemetric.cli import main

if __name__ == "__main__":
    sys.exit(main(["sample", *sys.argv[1:]]))
