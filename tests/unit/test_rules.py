"""The small pure decisions of replication.rules: tables and hypothesis properties."""
from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from minikafka.errors import InvalidReplicationFactorError
from minikafka.replication import rules
from minikafka.replication.rules import NO_LEADER, Election

# -- compute_hw ------------------------------------------------------------------------------


@pytest.mark.parametrize("hw,leo,followers,expected", [
    (0, 0, [], 0),
    (0, 5, [], 5),  # ISR = {leader}: HW = LEO
    (0, 5, [5], 5),
    (0, 5, [3], 3),
    (0, 5, [3, 4], 3),
    (0, 5, [4, 3, 5], 3),
    (2, 5, [1], 2),  # never decreases
    (2, 5, [-1], 2),  # unknown follower LEO holds it
    (0, 5, [5, -1], 0),
    (3, 5, [5, -1, 4], 3),
    (0, 5, [7], 5),  # a follower LEO above the leader's cannot lift it past the leader LEO
    (4, 9, [9, 9], 9),
])
def test_compute_hw_table(hw, leo, followers, expected):
    assert rules.compute_hw(hw, leo, followers) == expected


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 100), st.integers(0, 100), st.lists(st.integers(-1, 120), max_size=5))
def test_compute_hw_properties(hw, leo, followers):
    assume(hw <= leo)
    new = rules.compute_hw(hw, leo, followers)
    assert new >= hw  # never decreases
    assert new <= leo  # never above the leader LEO
    if any(f < 0 for f in followers):
        assert new == hw  # an unknown follower LEO holds it
    else:
        # naive reference: max(hw, min of every ISR LEO, leader included)
        assert new == max(hw, min([leo] + followers))
        # every ISR replica holds every committed offset that was not committed before
        assert all(f >= new for f in followers) or new == hw


def test_compute_hw_accepts_any_iterable():
    assert rules.compute_hw(0, 5, iter([4, 3])) == 3
    assert rules.compute_hw(0, 5, (x for x in [2])) == 2


# -- follower_hw -----------------------------------------------------------------------------


@pytest.mark.parametrize("leo,leader_hw,expected", [(0, 0, 0), (5, 3, 3), (3, 5, 3), (4, 4, 4), (2, 0, 0)])
def test_follower_hw_table(leo, leader_hw, expected):
    assert rules.follower_hw(leo, leader_hw) == expected


@given(st.integers(0, 1000), st.integers(0, 1000))
def test_follower_hw_property(leo, leader_hw):
    hw = rules.follower_hw(leo, leader_hw)
    assert hw <= leo and hw <= leader_hw
    assert hw in (leo, leader_hw)


# -- is_caught_up ----------------------------------------------------------------------------


@pytest.mark.parametrize("last,now,lag,expected", [
    (0, 0, 10000, True),
    (0, 9999, 10000, True),
    (0, 10000, 10000, True),  # exactly the lag time: still in sync
    (0, 10001, 10000, False),
    (5000, 15000, 10000, True),
    (5000, 15001, 10000, False),
    (100, 130, 30, True),
    (100, 131, 30, False),
])
def test_is_caught_up_table(last, now, lag, expected):
    assert rules.is_caught_up(last, now, lag) is expected


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(1, 10**5))
def test_is_caught_up_property(last, delta, lag):
    assert rules.is_caught_up(last, last + delta, lag) is (delta <= lag)


@pytest.mark.parametrize("follower_leo,leader_leo,expected", [
    (7, 7, True),  # at the leader's LEO: in sync however old its last catch-up
    (6, 7, False),
    (-1, 0, False),  # no fetch in this leadership: the lag time decides
    (7, None, False),  # the LEO rule left out
])
def test_is_caught_up_at_the_leaders_leo(follower_leo, leader_leo, expected):
    assert rules.is_caught_up(0, 10**6, 10_000, follower_leo, leader_leo) is expected


# -- can_join_isr ----------------------------------------------------------------------------


@pytest.mark.parametrize("leo,hw,start,expected", [
    (0, 0, 0, True),
    (5, 5, 0, True),
    (4, 5, 0, False),  # below the HW
    (6, 5, 0, True),
    (5, 5, 7, False),  # reached the HW but not the current epoch's start
    (7, 5, 7, True),
    (8, 5, 7, True),
    (6, 5, 7, False),
])
def test_can_join_isr_table(leo, hw, start, expected):
    assert rules.can_join_isr(leo, hw, start) is expected


@given(st.integers(0, 100), st.integers(0, 100), st.integers(0, 100))
def test_can_join_isr_property(leo, hw, start):
    assert rules.can_join_isr(leo, hw, start) is (leo >= max(hw, start))


# -- elect_leader ----------------------------------------------------------------------------


@pytest.mark.parametrize("replicas,isr,live,unclean,expected", [
    ((1, 2, 3), (1, 2, 3), {1, 2, 3}, False, Election(1, (1, 2, 3))),
    ((1, 2, 3), (1, 2, 3), {2, 3}, False, Election(2, (2, 3))),
    ((1, 2, 3), (3, 2), {1, 2, 3}, False, Election(2, (3, 2))),  # AR order decides, not ISR order
    ((3, 1, 2), (1, 2, 3), {1, 2, 3}, False, Election(3, (1, 2, 3))),
    ((1, 2, 3), (1,), {2, 3}, False, Election(NO_LEADER, (1,))),  # offline keeps the ISR
    ((1, 2, 3), (1, 2), {3}, False, Election(NO_LEADER, (1, 2))),
    ((1, 2, 3), (1,), {3, 2}, True, Election(2, (2,), unclean=True)),  # first live AR replica
    ((1, 2, 3), (1,), {3}, True, Election(3, (3,), unclean=True)),
    ((1, 2, 3), (1,), set(), True, Election(NO_LEADER, (1,))),
    ((1, 2, 3), (1, 3), {3}, True, Election(3, (3,))),  # a clean election is preferred
    ((1, 2), (1, 2), frozenset({2}), False, Election(2, (2,))),
])
def test_elect_leader_table(replicas, isr, live, unclean, expected):
    assert rules.elect_leader(replicas, isr, live, unclean) == expected


@st.composite
def election_input(draw):
    n = draw(st.integers(1, 5))
    replicas = draw(st.permutations(list(range(1, n + 1))))
    isr = draw(st.lists(st.sampled_from(replicas), min_size=1, max_size=n, unique=True))
    live = draw(st.sets(st.integers(1, n + 2)))
    unclean = draw(st.booleans())
    return replicas, isr, live, unclean


@settings(max_examples=400, deadline=None)
@given(election_input())
def test_elect_leader_properties(args):
    replicas, isr, live, unclean = args
    e = rules.elect_leader(replicas, isr, live, unclean)
    clean = [r for r in replicas if r in live and r in isr]
    if clean:
        assert e.leader == clean[0] and not e.unclean
        assert e.isr == tuple(b for b in isr if b in live)
        assert e.leader in e.isr
        assert e.isr  # never empty
    elif unclean and any(r in live for r in replicas):
        assert e.leader == [r for r in replicas if r in live][0]
        assert e.unclean and e.isr == (e.leader,)
    else:
        assert e.leader == NO_LEADER
        assert e.isr == tuple(isr)


# -- shrink_isr_on_failure -------------------------------------------------------------------


@pytest.mark.parametrize("isr,dead,expected", [
    ((1, 2, 3), 2, (1, 3)),
    ((1, 2, 3), 4, (1, 2, 3)),
    ((1,), 1, (1,)),  # never the last member
    ((2, 1), 1, (2,)),
    ((), 1, ()),
])
def test_shrink_isr_on_failure_table(isr, dead, expected):
    assert rules.shrink_isr_on_failure(isr, dead) == expected


@given(st.lists(st.integers(0, 6), min_size=1, max_size=6, unique=True), st.integers(0, 7))
def test_shrink_isr_on_failure_property(isr, dead):
    out = rules.shrink_isr_on_failure(isr, dead)
    assert out  # never empties
    assert set(out) <= set(isr)
    if len(isr) > 1 or dead not in isr:
        assert dead not in out
        assert list(out) == [b for b in isr if b != dead]


# -- assign_replicas -------------------------------------------------------------------------


def test_assign_replicas_table():
    assert rules.assign_replicas([3, 1, 2], 4, 2) == {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 2]}
    assert rules.assign_replicas([10, 20, 30], 3, 3) == {0: [10, 20, 30], 1: [20, 30, 10], 2: [30, 10, 20]}
    assert rules.assign_replicas([5], 2, 1) == {0: [5], 1: [5]}
    assert rules.assign_replicas([1, 2], 0, 1) == {}


@pytest.mark.parametrize("brokers,rf", [([1, 2], 3), ([], 1), ([1, 2, 3], 0), ([1], -1)])
def test_assign_replicas_invalid_rf(brokers, rf):
    with pytest.raises(InvalidReplicationFactorError):
        rules.assign_replicas(brokers, 3, rf)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=8, unique=True), st.integers(0, 20), st.data())
def test_assign_replicas_property(brokers, partitions, data):
    rf = data.draw(st.integers(1, len(brokers)))
    out = rules.assign_replicas(brokers, partitions, rf)
    ordered = sorted(brokers)
    n = len(ordered)
    assert sorted(out) == list(range(partitions))
    for i, reps in out.items():
        assert reps == [ordered[(i + j) % n] for j in range(rf)]
        assert len(set(reps)) == rf  # no broker twice
    # leaders (first replicas) are spread round robin
    leaders = [out[i][0] for i in range(partitions)]
    for b in ordered:
        assert abs(leaders.count(b) - partitions / n) < 1


# -- end_offset_for / truncation_offset ------------------------------------------------------


def test_end_offset_for_reference_table():
    entries = [(0, 0), (2, 4), (5, 9)]
    assert rules.end_offset_for(entries, 5, 12) == (5, 12)
    assert rules.end_offset_for(entries, 3, 12) == (2, 9)
    assert rules.end_offset_for(entries, 0, 12) == (0, 4)
    assert rules.end_offset_for(entries, -1, 12) == (-1, -1)
    assert rules.end_offset_for([], 3, 12) == (-1, -1)
    assert rules.end_offset_for([(2, 3)], 1, 12) == (1, 3)


@pytest.mark.parametrize("epoch,leader_end,own_end,own_leo,expected", [
    (3, 10, 12, 15, 10),
    (3, 12, 10, 15, 10),
    (3, 20, 20, 15, 15),
    (-1, -1, 5, 8, 8),
    (3, -1, 5, 8, 8),
])
def test_truncation_offset(epoch, leader_end, own_end, own_leo, expected):
    assert rules.truncation_offset(epoch, leader_end, own_end, own_leo) == expected


def test_preferred_leader_imbalance():
    leaders = {("t", 0): 1, ("t", 1): 1, ("t", 2): 3, ("u", 0): 2}
    preferred = {("t", 0): 1, ("t", 1): 2, ("t", 2): 3, ("u", 0): 2}
    assert rules.preferred_leader_imbalance(leaders, preferred) == {1: 0.0, 2: 0.5, 3: 0.0}
