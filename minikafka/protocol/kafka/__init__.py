"""Kafka's binary protocol, as served by a broker's Kafka listener (pure: no I/O).

* :mod:`.wire`: primitive types (integers, varints, strings, compact forms).
* :mod:`.schema`: versioned schemas declared once, encoded and decoded from the declaration.
* :mod:`.apis`: the served APIs, their version ranges and schemas.
* :mod:`.frames`: request and response headers and size-prefixed frames.
"""
