"""``python -m minikafka``: the same as the ``minikafka`` command."""
import sys

from minikafka.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
