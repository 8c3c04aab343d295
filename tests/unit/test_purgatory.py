"""The purgatory resumes a waiter when its condition holds, and only then."""
from __future__ import annotations

import asyncio

from minikafka.broker.purgatory import Purgatory


async def test_a_wake_resumes_only_the_waiters_whose_condition_holds():
    purgatory = Purgatory()
    hw = [0]
    resumed: list[int] = []

    async def wait_for_hw(target: int) -> None:
        assert await purgatory.wait_until(["tp"], lambda: hw[0] >= target, 10)
        resumed.append(target)

    waiters = [asyncio.create_task(wait_for_hw(t)) for t in (1, 2, 3)]
    await asyncio.sleep(0)
    assert len(purgatory) == 3
    hw[0] = 2
    purgatory.wake("tp")
    await asyncio.sleep(0.01)
    assert sorted(resumed) == [1, 2] and len(purgatory) == 1, "the third still waits, not woken for nothing"
    hw[0] = 3
    purgatory.wake("tp")
    await asyncio.gather(*waiters)
    assert sorted(resumed) == [1, 2, 3] and len(purgatory) == 0


async def test_a_waiter_is_not_resumed_by_a_wake_before_its_condition_holds():
    purgatory = Purgatory()
    checks = [0]

    def ready() -> bool:
        checks[0] += 1
        return False

    waiter = asyncio.create_task(purgatory.wait_until(["tp"], ready, 0.05))
    await asyncio.sleep(0)
    for _ in range(5):
        purgatory.wake("tp")
    assert not waiter.done()
    assert await waiter is False, "the timeout ends the wait with the condition false"
    assert len(purgatory) == 0


async def test_a_condition_that_raises_resumes_its_waiter_which_raises_in_its_own_context():
    purgatory = Purgatory()
    broken = [False]

    def ready() -> bool:
        if broken[0]:
            raise RuntimeError("state gone")
        return False

    waiter = asyncio.create_task(purgatory.wait_until(["a", "b"], ready, 10))
    await asyncio.sleep(0)
    broken[0] = True
    purgatory.wake_all()
    try:
        await waiter
    except RuntimeError:
        pass
    else:
        raise AssertionError("the waiter's own check raises")
    assert len(purgatory) == 0
