"""The controller: one broker at a time, elected through /controller in ZooKeeper."""
