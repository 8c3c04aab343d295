"""``minikafka bench suite``: the benchmark suite (scenarios, yardsticks, the runner).

* :mod:`.figures` - min / median / max of repeated runs (pure).
* :mod:`.workload` - the records every scenario sends, and the Kafka listener's address.
* :mod:`.scenarios` - one function per scenario: produce, consume, latency, failover, memory.
* :mod:`.yardsticks` - what the same work costs without our brokers: ``limit`` (the same
  batch bytes through a bare aiohttp handler) and ``mock`` (librdkafka's built-in mock
  cluster, through kcat).
* :mod:`.suite` - runs every scenario on its own cluster (or a given one) and prints the table.
* :mod:`.soak` - a long-running load that prints each broker's RSS every minute (``scripts/soak.py``).
"""
