"""Deterministic simulation of the whole cluster: the real brokers on simulated ports.

See docs/simulation.md.  :func:`~.runner.run_seed` runs one seed; ``minikafka sim``
is the command line.
"""
