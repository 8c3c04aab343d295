"""minikafka as the test harness of a Kafka application.

* a pytest plugin (:mod:`.plugin`, loaded through the ``pytest11`` entry point):
  ``minikafka_cluster``, ``minikafka_topic`` and ``minikafka_admin`` fixtures;
* :func:`start_cluster` and :class:`LocalCluster` (:mod:`.cluster`), for any other test
  runner;
* faults by role (:mod:`.faults`, :mod:`.roles`): ``cluster.faults.kill(leader_of("t", 0))``,
  each a context manager that heals on exit;
* waits (:mod:`.waits`): a partition has a leader, its ISR is full, a group is Stable, a
  group caught up;
* a checker for the application's own records (:mod:`.recorder`): wrap the producers
  and consumers, then ``recorder.check(...)`` reports lost, duplicated, reordered and
  aborted-but-seen records with their offsets;
* a secured Kafka listener (:mod:`.security`: SASL/PLAIN users, TLS with certificates of
  :mod:`.tls`) and each client's settings to reach it.

docs/testing.md shows each with an example.
"""
from __future__ import annotations

from .cluster import LocalCluster, default_broker_configs, start_cluster
from ..faults.app_checker import AppVerdict, check_application
from .faults import FaultAction, Faults
from .recorder import Recorder, read_final_logs
from .roles import Role, broker, controller, follower_of, group_coordinator, leader_of, parse_role, txn_coordinator
from .security import Security
from .tls import Certs, make_certs
from .waits import WaitTimeout, Waits, wait_until

__all__ = [
    "AppVerdict", "Certs", "FaultAction", "Faults", "LocalCluster", "Recorder", "Role", "Security", "WaitTimeout",
    "Waits", "broker", "check_application", "controller", "default_broker_configs", "follower_of",
    "group_coordinator", "leader_of", "make_certs", "parse_role", "read_final_logs", "start_cluster",
    "txn_coordinator", "wait_until",
]
