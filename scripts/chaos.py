#!/usr/bin/env python3
"""Fault-injection suite: kill, pause and stop brokers under load, then check that no
acknowledged record was lost (see minikafka/chaos/).

    .venv/bin/python scripts/chaos.py --faults 30 --seed 1
    .venv/bin/python scripts/chaos.py --duration 120 --truncation high_watermark --seed 7 -v
    .venv/bin/python scripts/chaos.py --scenario kip101 --truncation high_watermark --faults 20
    .venv/bin/python scripts/chaos.py --transactions 400 --rate 20 --faults 30   # exactly-once copiers

Prints one summary line on stdout:

    acked=… lost=… duplicated=… faults=… leader_elections=… unclean=… longest_unavailable_ms=… ok=true|false

and exits 0 when nothing acknowledged was lost and every check passed, 1 otherwise.
With --transactions the line also counts the transactions and the violations of the
transactional invariants (docs/transactions.md, "Under faults").
As root (with iptables and a cgroup v2 hierarchy) the faults include link faults:
iptables rules on loopback cut a broker off from another broker, from ZooKeeper or
from the controller's requests for a while (--no-link-faults leaves them out).
With --verbose the faults are printed on stderr as they happen; when a check fails
the details (faults, lost records, diverging replicas) go to stderr and the cluster
folder is kept.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minikafka.chaos.command import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
