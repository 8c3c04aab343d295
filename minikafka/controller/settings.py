"""The controller's typed view of the broker's configuration.

The shell (:mod:`.controller`) reads it from the broker's
:class:`~minikafka.config.LiveConfig` (``live.view(ControllerSettings)``); the core
(:mod:`.core`) builds it from the config it is given, again after each
``BrokerConfigChanged``.  The topic settings the controller elects with
(unclean.leader.election.enable, whose broker default is dynamic) are read per topic
through :func:`~minikafka.config.topic_setting`, not here.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..config import BrokerConfig, settings_of

__all__ = ["ControllerSettings"]


@dataclass(frozen=True)
class ControllerSettings:
    """The settings the controller reads.  All static."""

    request_timeout_ms: int  # of its requests to the brokers
    auto_leader_rebalance_enable: bool
    leader_imbalance_check_interval_seconds: int
    leader_imbalance_per_broker_percentage: int
    delete_topic_enable: bool

    @classmethod
    def of(cls, config: BrokerConfig) -> ControllerSettings:
        """The controller settings of ``config``."""
        return settings_of(cls, config)
