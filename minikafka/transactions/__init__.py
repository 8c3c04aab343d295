"""The transaction coordinator's pure core (KIP-98): the state machine of a
transactional id (:mod:`.state`) and the records of ``__transaction_state``
(:mod:`.records`).  No I/O: the broker's shell (:mod:`minikafka.broker.txn_coordinator`)
writes, sends and answers."""
