"""KIP-380's broker epoch check of a LeaderAndIsr (ControlApis.check_broker_epoch): a
request for an earlier registration of this broker id, or one reaching a process that has
not registered yet, is refused with STALE_BROKER_EPOCH; one for this broker's own epoch,
or for a newer one (its new registration after a session expiry, seen by the controller
before the broker read its czxid back), is obeyed, as in Kafka's isBrokerEpochStale."""
from __future__ import annotations

import pytest

from minikafka.broker.apis.control import ControlApis
from minikafka.errors import StaleBrokerEpochError


class Metrics:
    def __init__(self):
        self.counted = []

    def count(self, name, n=1):
        self.counted.append(name)


def _apis(mine: int) -> ControlApis:
    apis = ControlApis.__new__(ControlApis)
    apis.broker_id, apis.broker_epoch, apis.metrics = 2, (lambda: mine), Metrics()
    return apis


@pytest.mark.parametrize("mine, epoch", [(193, 193), (193, 351), (193, -1), (-1, -1)])
def test_its_own_epoch_a_newer_one_and_none_are_obeyed(mine, epoch):
    apis = _apis(mine)
    apis.check_broker_epoch(epoch)
    assert apis.metrics.counted == []


@pytest.mark.parametrize("mine, epoch, words", [
    (351, 193, "broker 2: request for broker epoch 193, but this broker's epoch is 351"),
    (-1, 193, "broker 2: request for broker epoch 193, but this broker's epoch is not known yet (not registered)"),
])
def test_an_earlier_registrations_epoch_is_refused(mine, epoch, words):
    apis = _apis(mine)
    with pytest.raises(StaleBrokerEpochError, match=words.replace("(", r"\(").replace(")", r"\)")):
        apis.check_broker_epoch(epoch)
    assert len(apis.metrics.counted) == 1
