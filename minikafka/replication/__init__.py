"""Replication rules and the replica state machine: pure, no I/O, no clock.

Time enters as ``now_ms`` arguments; decisions come out as return values and
:class:`~minikafka.replication.partition.Effects` for the broker shell to carry out.
"""
