"""The local launcher behind ``minikafka cluster ...``: ZooKeeper and brokers as background processes."""
from .launcher import down, kill, resume, start, status, stop, up
from .state import ClusterState, bootstrap_servers, load, pid_alive, save

__all__ = ["ClusterState", "bootstrap_servers", "down", "kill", "load", "pid_alive", "resume", "save",
           "start", "status", "stop", "up"]
