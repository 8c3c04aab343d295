"""Authentication and authorization rules, without I/O: users and principals
(:mod:`minikafka.auth.users`) and ACLs with Kafka's AclAuthorizer decision
(:mod:`minikafka.auth.acls`).  The broker side is :mod:`minikafka.broker.security`."""
