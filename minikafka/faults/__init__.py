"""The fault-testing vocabulary shared by the simulation (:mod:`minikafka.sim`) and the
live fault suite (:mod:`minikafka.chaos`), in Jepsen's split:

* :mod:`.workload`: what operations the clients run (acks=all producers writing unique
  values, consumers reading every partition from the start, a committer of a group's
  offsets);
* :mod:`.history`: what the clients asked and what they were told: every operation's
  invocation and completion, ``ok``, ``fail`` or ``info`` (indefinite);
* :mod:`.checker`: what must hold of a history and the final logs: no acknowledged record
  lost, none duplicated, acknowledged records in order within a partition, no consumed
  record vanished, no acknowledged offset commit lost.

Pure: no I/O, clock, randomness or threads.  Each runner keeps what is its own: how
its clients reach the brokers (simulated network or real sockets), how it injects
faults and how it reads the healed cluster's final logs.
"""
