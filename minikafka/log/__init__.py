"""The partition log, the leader-epoch cache and checkpoint formats: synchronous and pure.

Nothing here touches the network, a clock or the disk: broker/storage.py mirrors
appends and truncations to files for ``--storage disk``.
"""
