"""Apache Kafka 3.9 in ZooKeeper mode as the reference: a real Kafka cluster on demand
(:mod:`.cluster`), and the scenarios that ask it and minikafka the same questions
(:mod:`.znodes`, :mod:`.fidelity`)."""
