"""The broker's Kafka listener: Kafka's binary protocol over TCP beside the msgpack/HTTP API.

* :mod:`.server`: the TCP listener, one task per connection, requests answered in order.
* :mod:`.handlers`: each Kafka API translated to the broker's own operations.
"""
