"""The state files of the other process groups a command starts and later finds again:
``reference.json`` (`minikafka reference up`, Apache Kafka beside ours) and
``spark-cluster.json`` (`minikafka spark-cluster up`).

Each is a dataclass whose one dict field maps numbers (broker ids, worker numbers) to
member dataclasses.  It is written atomically (a half-written file is never seen) and
read back with a one-line :class:`~minikafka.errors.ClientError` when it is missing,
unreadable or not such a file, never a traceback.  (``cluster.json``, which holds
secrets and is written mode 600, has its own module, :mod:`.state`.)
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ClientError

T = TypeVar("T")


def save_state(state: Any, members: str, path: Path) -> None:
    """Write the dataclass ``state`` to ``path`` as JSON (its dict field ``members`` keyed by
    strings, as JSON wants), replacing the file in one step."""
    data = asdict(state)
    data[members] = {str(k): v for k, v in data[members].items()}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


def load_state(cls: type[T], member: type, members: str, path: Path, missing: str) -> T:
    """Read what :func:`save_state` wrote: ``cls`` with its ``members`` rebuilt as
    ``{int: member(...)}``; ClientError ``missing`` when there is no file."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ClientError(missing) from None
    except (OSError, ValueError) as exc:
        raise ClientError(f"cannot read {path}: {exc}") from None
    try:
        data[members] = {int(k): member(**v) for k, v in data[members].items()}
        return cls(**data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ClientError(f"{path} is not a minikafka state file: {exc!r}") from None
