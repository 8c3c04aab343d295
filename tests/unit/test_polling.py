"""minikafka.polling.poll, the loop behind the harness's, the reference tools' and the
benchmarks' waits."""
from __future__ import annotations

import pytest

from minikafka.polling import poll
from minikafka.testing.waits import WaitTimeout, wait_until


def test_poll_returns_the_first_truthy_answer_and_counts_the_not_yet_errors():
    answers = iter([ConnectionError("refused"), 0, [], "leader 2"])

    def condition():
        got = next(answers)
        if isinstance(got, Exception):
            raise got
        return got
    got = poll(condition, timeout_s=5, interval_s=0, not_yet=(OSError,))
    assert got and got.value == "leader 2" and got.seconds >= 0


def test_poll_times_out_with_what_it_saw_last_and_lets_other_errors_through():
    got = poll(lambda: 0, timeout_s=0.05, interval_s=0.01)
    assert not got and got.value is None and got.last == 0 and got.seconds >= 0.05
    with pytest.raises(KeyError):
        poll(lambda: {}["missing"], timeout_s=1, not_yet=(OSError,))
    with pytest.raises(WaitTimeout, match=r"waiting for a leader \(last seen: 'OSError: down'\)"):
        wait_until(lambda: (_ for _ in ()).throw(OSError("down")), timeout_s=0.05, what="a leader", interval_s=0.01)
