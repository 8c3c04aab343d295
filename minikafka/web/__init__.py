"""HTTP routes beside the protocol: the dashboard, its JSON state and /metrics."""
from __future__ import annotations

from typing import Any


def setup_routes(app: Any, broker: Any) -> None:
    """Add the dashboard, state and metrics routes to a broker's aiohttp app."""
