"""How the request layer answers a request whose entries are refused one by one.

Access is checked here, in the request layer, with the caller's
:class:`~.context.RequestContext` (:meth:`~minikafka.broker.security.Security.allowed`),
as Kafka's KafkaApis does: a handler asks for each entry (a partition, a topic) whether
it is refused, hands the others to its service, which trusts its caller, and answers the
refused ones with their error in the request's order.
"""
from __future__ import annotations

from typing import Callable, Sequence, TypeVar

from ...errors import KafkaError

T = TypeVar("T")
R = TypeVar("R")


def split(items: Sequence[T], refused: Callable[[T], KafkaError | None]) -> tuple[list[T], dict[int, KafkaError]]:
    """The items not refused, and the refusals of the others by their position."""
    ok: list[T] = []
    errors: dict[int, KafkaError] = {}
    for i, item in enumerate(items):
        err = refused(item)
        if err is None:
            ok.append(item)
        else:
            errors[i] = err
    return ok, errors


def merge(items: Sequence[T], refused: dict[int, KafkaError], answered: Sequence[R],
          answer: Callable[[T, KafkaError], R]) -> list[R]:
    """One answer per item in order: the service's ``answered`` (one per item not refused),
    and ``answer(item, error)`` for the refused ones."""
    rest = iter(answered)
    return [answer(item, refused[i]) if i in refused else next(rest) for i, item in enumerate(items)]


def per_entry(items: Sequence[T], refused: Callable[[T], KafkaError | None], serve: Callable[[list[T]], list[R]],
              answer: Callable[[T, KafkaError], R]) -> list[R]:
    """One answer per item in order: ``serve`` (the service) answers the items not refused,
    ``answer(item, error)`` the refused ones."""
    ok, refusals = split(items, refused)
    if not refusals:
        return serve(list(items))
    return merge(items, refusals, serve(ok) if ok else [], answer)
