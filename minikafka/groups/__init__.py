"""Consumer groups: the group state machine, the offsets topic's records and the consumer protocol."""
