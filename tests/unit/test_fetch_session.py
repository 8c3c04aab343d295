"""The incremental fetch session rules (KIP-227): minikafka/replication/fetch_session.py."""
from itertools import count

from minikafka.replication.fetch_session import (
    FETCH_SESSION_ID_NOT_FOUND, FINAL_EPOCH, INITIAL_EPOCH, INT32_MAX, INVALID_FETCH_SESSION_EPOCH,
    FetchSessionCache, FetchSessionHandler, PartitionFetch, next_epoch,
)

A, B, C = ("t", 0), ("t", 1), ("u", 0)


def ids(start=7):
    return count(start)


_IDS = count(7)


def full(cache, parts, privileged=True, now=0, new_ids=None):
    ctx = cache.begin(0, INITIAL_EPOCH, parts, [], privileged, now)
    return ctx, cache.complete(ctx, now, new_ids or _IDS)


def test_full_fetch_opens_a_session_and_incremental_reads_every_session_partition():
    cache = FetchSessionCache(10)
    ctx, sid = full(cache, {A: PartitionFetch(5, 0, 100, 3, 4), B: PartitionFetch(9, 0, 100, 3, 9)})
    assert ctx.kind == "full" and sid > 0 and len(cache) == 1
    # only A moved: the request names A, yet both partitions are read, B at its cached offset
    inc = cache.begin(sid, 1, {A: PartitionFetch(6, 0, 100, 3, 5)}, [], True, 10)
    assert inc.incremental and inc.error is None
    assert {(c.topic, c.partition): c.fetch_offset for c in inc.partitions} == {A: 6, B: 9}
    assert cache.complete(inc, 10, ids()) == sid


def test_incremental_answer_names_only_partitions_with_news():
    cache = FetchSessionCache(10)
    _, sid = full(cache, {A: PartitionFetch(5, 0, 100, 3, 5), B: PartitionFetch(9, 0, 100, 3, 9)})
    inc = cache.begin(sid, 1, {}, [], True, 10)
    a, b = inc.partitions
    assert not a.must_answer(False, False, 5, 0)  # nothing new
    assert a.must_answer(True, False, 5, 0)  # records
    assert b.must_answer(False, False, 10, 0)  # the high watermark moved
    assert not b.must_answer(False, False, 10, 0)  # ... and is now known
    assert b.must_answer(False, False, 10, 3)  # the log start moved
    assert b.must_answer(False, True, 10, 3)  # an error, always


def test_wrong_epoch_and_unknown_session_are_errors_that_change_nothing():
    cache = FetchSessionCache(10)
    _, sid = full(cache, {A: PartitionFetch(5)})
    bad = cache.begin(sid, 2, {B: PartitionFetch(1)}, [A], True, 1)
    assert bad.error == INVALID_FETCH_SESSION_EPOCH and bad.partitions == []
    assert list(cache.sessions[sid].partitions) == [A] and cache.sessions[sid].epoch == 1
    assert cache.begin(sid + 1, 1, {}, [], True, 1).error == FETCH_SESSION_ID_NOT_FOUND
    assert cache.begin(sid, 1, {}, [], True, 1).error is None
    assert cache.begin(sid, 1, {}, [], True, 1).error == INVALID_FETCH_SESSION_EPOCH  # epoch 1 was used


def test_forgotten_partitions_leave_the_session_and_added_ones_join():
    cache = FetchSessionCache(10)
    _, sid = full(cache, {A: PartitionFetch(5), B: PartitionFetch(6)})
    inc = cache.begin(sid, 1, {C: PartitionFetch(0)}, [A], True, 1)
    assert [(c.topic, c.partition) for c in inc.partitions] == [B, C]


def test_final_epoch_is_sessionless_and_closes_the_session():
    cache = FetchSessionCache(10)
    _, sid = full(cache, {A: PartitionFetch(5)})
    ctx = cache.begin(sid, FINAL_EPOCH, {B: PartitionFetch(1)}, [], True, 1)
    assert ctx.kind == "sessionless" and [(c.topic, c.partition) for c in ctx.partitions] == [B]
    assert cache.complete(ctx, 1, ids()) == 0 and sid not in cache


def test_full_fetch_with_a_session_id_replaces_that_session():
    cache = FetchSessionCache(10)
    _, sid = full(cache, {A: PartitionFetch(5)})
    ctx = cache.begin(sid, INITIAL_EPOCH, {A: PartitionFetch(5)}, [], True, 1)
    new = cache.complete(ctx, 1, _IDS)
    assert new != sid and sid not in cache and list(cache.sessions) == [new]


def test_zero_slots_turns_sessions_off():
    cache = FetchSessionCache(0)
    _, sid = full(cache, {A: PartitionFetch(5)})
    assert sid == 0 and len(cache) == 0


def test_new_ids_skip_ids_in_use_and_zero():
    cache = FetchSessionCache(10)
    _, first = full(cache, {A: PartitionFetch(5)}, new_ids=iter([0, 3]))
    _, second = full(cache, {A: PartitionFetch(5)}, new_ids=iter([3, 0, 4]))
    assert (first, second) == (3, 4)


def test_eviction_stale_first_then_least_valuable_followers_privileged():
    cache = FetchSessionCache(2)
    _, s1 = full(cache, {A: PartitionFetch(0)}, privileged=False, now=0)
    _, s2 = full(cache, {A: PartitionFetch(0), B: PartitionFetch(0)}, privileged=False, now=10)
    # full and nothing stale: a consumer's session as small as the smallest is refused
    _, s3 = full(cache, {C: PartitionFetch(0)}, privileged=False, now=20)
    assert s3 == 0 and len(cache) == 2 and cache.evictions == 0
    # a follower's session evicts the least valuable consumer session
    _, s4 = full(cache, {C: PartitionFetch(0)}, privileged=True, now=30)
    assert s4 and s1 not in cache and s2 in cache and cache.evictions == 1
    # a consumer's session worth no more than the least valuable one (s2, 2 partitions) is refused
    _, s5 = full(cache, {A: PartitionFetch(0), B: PartitionFetch(0)}, privileged=False, now=40)
    assert s5 == 0
    _, s6 = full(cache, {A: PartitionFetch(0), B: PartitionFetch(0), C: PartitionFetch(0)}, privileged=False, now=50)
    assert s6 and s2 not in cache and s4 in cache
    # unused for longer than MIN_EVICTION_MS: evicted first, whatever its value
    _, s7 = full(cache, {A: PartitionFetch(0)}, privileged=False, now=30 + 120_001)
    assert s7 and s4 not in cache and s6 in cache and cache.evictions == 3


def test_followers_sessions_are_not_evicted_by_followers_of_equal_size():
    cache = FetchSessionCache(1)
    _, s1 = full(cache, {A: PartitionFetch(0)}, privileged=True, now=0)
    _, s2 = full(cache, {B: PartitionFetch(0)}, privileged=True, now=1)
    assert s2 == 0 and s1 in cache


def test_next_epoch_wraps_to_one():
    assert next_epoch(INITIAL_EPOCH) == 1 and next_epoch(INT32_MAX) == 1 and next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_handler_sends_full_then_only_changes_and_forgotten():
    h = FetchSessionHandler()
    r = h.build({A: PartitionFetch(5), B: PartitionFetch(9)})
    assert r.full and (r.session_id, r.epoch) == (0, 0) and set(r.to_send) == {A, B}
    h.handle_response(42)
    r = h.build({A: PartitionFetch(5), B: PartitionFetch(9)})
    assert not r.full and (r.session_id, r.epoch) == (42, 1) and r.to_send == {} and r.forgotten == []
    h.handle_response(42)
    r = h.build({A: PartitionFetch(6), C: PartitionFetch(0)})
    assert (r.epoch, set(r.to_send), r.forgotten) == (2, {A, C}, [B])
    h.handle_response(42)
    r = h.build({A: PartitionFetch(6, current_leader_epoch=4), C: PartitionFetch(0, log_start_offset=1)})
    assert set(r.to_send) == {A, C}


def test_handler_resets_on_session_errors_and_failures():
    h = FetchSessionHandler()
    h.build({A: PartitionFetch(5)})
    h.handle_response(42)
    h.build({A: PartitionFetch(5)})
    h.handle_response(0, FETCH_SESSION_ID_NOT_FOUND)  # the leader lost it (a restart): a new one
    r = h.build({A: PartitionFetch(5)})
    assert r.full and (r.session_id, r.epoch) == (0, 0)
    h.handle_response(43)
    h.build({A: PartitionFetch(5)})
    h.handle_response(0, INVALID_FETCH_SESSION_EPOCH)  # close it and start over
    r = h.build({A: PartitionFetch(5)})
    assert r.full and (r.session_id, r.epoch) == (43, 0)
    h.handle_response(44)
    h.build({A: PartitionFetch(5)})
    h.handle_error()  # no answer: the leader's epoch is unknown
    r = h.build({A: PartitionFetch(5)})
    assert r.full and (r.session_id, r.epoch) == (44, 0)


def test_handler_stays_sessionless_when_the_leader_keeps_no_session():
    h = FetchSessionHandler()
    h.build({A: PartitionFetch(5)})
    h.handle_response(0)
    r = h.build({A: PartitionFetch(5)})
    assert r.full and r.epoch == 0 and set(r.to_send) == {A}


def test_leader_and_fetcher_agree_over_many_rounds():
    cache, h = FetchSessionCache(5), FetchSessionHandler()
    offsets = {A: 0, B: 0, C: 0}
    gen = ids()
    for rnd in range(20):
        wanted = {tp: PartitionFetch(o) for tp, o in offsets.items() if not (tp == C and rnd % 7 == 3)}
        r = h.build(wanted)
        ctx = cache.begin(r.session_id, r.epoch, r.to_send, r.forgotten, True, rnd)
        assert ctx.error is None
        assert {(c.topic, c.partition): c.fetch_offset for c in ctx.partitions} == {tp: f.fetch_offset for tp, f in wanted.items()}
        h.handle_response(cache.complete(ctx, rnd, gen))
        offsets[A] += 1  # A is busy, B idle
    assert len(cache) == 1 and cache.incremental_fetches == 19


def test_handler_compares_only_the_changed_partitions_it_is_told_of():
    """A fetcher that keeps its entries between requests names the partitions that changed
    since the last request built: only those are compared and sent or forgotten, and a
    full fetch (the first, or after a failure) still sends every partition."""
    h = FetchSessionHandler()
    r = h.build({A: PartitionFetch(5), B: PartitionFetch(9)}, changed={A, B})
    assert r.full and set(r.to_send) == {A, B}
    h.handle_response(42)
    r = h.build({A: PartitionFetch(5), B: PartitionFetch(9)}, changed=set())
    assert (r.to_send, r.forgotten) == ({}, [])
    h.handle_response(42)
    # B changed, but only A is named: B is not compared (the caller vouches it did not change)
    r = h.build({A: PartitionFetch(6), B: PartitionFetch(10)}, changed={A})
    assert set(r.to_send) == {A} and r.forgotten == []
    h.handle_response(42)
    r = h.build({A: PartitionFetch(6), C: PartitionFetch(0)}, changed={B, C})
    assert set(r.to_send) == {C} and r.forgotten == [B]
    h.handle_error()  # no answer: the next request is full, whatever is named
    r = h.build({A: PartitionFetch(6), C: PartitionFetch(0)}, changed=set())
    assert r.full and set(r.to_send) == {A, C}
