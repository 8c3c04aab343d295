"""A long-running load that shows retention and compaction keep each broker's memory flat:
the entry point of :mod:`minikafka.bench.soak`, whose docstring gives the commands and
what it prints.  ``.venv/bin/python scripts/soak.py --help``."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minikafka.bench.soak import main  # noqa: E402

if __name__ == "__main__":
    main()
