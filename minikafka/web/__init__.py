"""HTTP routes beside the protocol: the dashboard, its JSON state and /metrics.

Every broker serves them on its own port:

* ``GET /``: the dashboard (plain HTML, CSS and JavaScript from ``web/static``, no
  build step and nothing fetched from elsewhere); it polls the two JSON routes.
* ``GET /api/state?topic=T&internal=1&problems=first&offset=O&limit=N``: the cluster as
  this broker sees it (:mod:`minikafka.web.state`): the summary of every partition and the
  page of partition rows asked for, problem partitions first; a bad parameter gets a 400.
* ``GET /api/events?since=TS&limit=N``: the cluster-wide event timeline, kept by every
  broker (it pulls the others' events every second), so a dead broker's events stay.
* ``GET /api/records?topic=T&partition=P&limit=N``: the last N (1 to 100, default 20)
  committed records of a partition, read from its leader as a consumer
  (:mod:`minikafka.web.records`); bad parameters get a JSON error with Kafka's error name.
* ``GET /metrics``: Prometheus text format (:func:`minikafka.broker.metrics.render_prometheus`,
  documented in docs/metrics.md).

The page and its JSON routes authenticate as the msgpack API on the same listener
does: on a SASL_PLAINTEXT or SASL_SSL listener they want a user of ``sasl.users.file``
in an ``Authorization: Basic`` header and answer 401 with a Basic challenge otherwise
(a browser asks for the user and password once, then sends them on every poll); a
wrong or missing password is answered after ``connection.failed.authentication.delay.ms``
and closes the connection, as on the msgpack API.
``/metrics`` (counts and names, never records) and ``/static/`` stay open.  No route
sends ``Access-Control-Allow-Origin``: pages of other sites cannot read the JSON
(docs/security.md).

The routes see their broker only through a :class:`~minikafka.web.view.BrokerView`.
"""
from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable

if TYPE_CHECKING:
    from .view import BrokerView

STATIC_DIR = Path(__file__).parent / "static"
NO_CACHE = {"Cache-Control": "no-store"}
# The JSON is for the page this broker served, and for programs: no Access-Control-Allow-Origin
# header, so a page of another site (another broker's dashboard included) cannot read it.
API_HEADERS = NO_CACHE
# The challenge of a SASL listener's routes: HTTP Basic, as the msgpack API takes it.
CHALLENGE = 'Basic realm="minikafka", charset="UTF-8"'
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def setup_routes(app: Any, view: "BrokerView") -> None:
    """Add the dashboard, state and metrics routes to a broker's aiohttp app."""
    from aiohttp import web

    from ..errors import InvalidRequestError, KafkaError, SaslAuthenticationFailedError, TopicAuthorizationFailedError, UnknownServerError
    from .records import RecordReader, error_body, parse_query
    from .state import WebState, parse_state_query

    state = WebState(view)
    reader = RecordReader(view, state.endpoint)

    async def keep_timeline(app: Any) -> AsyncIterator[None]:
        """The app owns the task that keeps the other brokers' events: started with the
        app, cancelled at its cleanup."""
        task = asyncio.get_running_loop().create_task(view.keep_timeline(), name="web-timeline-pull")
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    app.cleanup_ctx.append(keep_timeline)

    def authenticated(handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
        """``handler`` behind the listener's authentication: 401 and a Basic challenge
        when a SASL listener got no user or a wrong password, answered after the
        msgpack API's failed-login delay and closing the connection, as its answers do."""
        async def checked(request: web.Request) -> web.StreamResponse:
            peercert = request.transport.get_extra_info("peercert") if request.transport is not None else None
            try:
                view.authenticate(request.headers, peercert)
            except SaslAuthenticationFailedError as exc:
                body, _ = error_body(exc)
                await view.failed_login_pause()  # each guess costs the delay and a new connection
                response = web.json_response(body, status=401, headers={**NO_CACHE, "WWW-Authenticate": CHALLENGE})
                response.force_close()
                return response
            return await handler(request)
        return checked

    async def index(request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC_DIR / "index.html", headers=NO_CACHE)

    async def api_state(request: web.Request) -> web.Response:
        try:
            query = parse_state_query(request.query)
        except ValueError as exc:
            body, status = error_body(InvalidRequestError(str(exc)))
            return web.json_response(body, status=status, headers=API_HEADERS)
        return web.json_response(await state.cluster_state(query), headers=API_HEADERS)

    async def api_events(request: web.Request) -> web.Response:
        try:
            since = float(request.query.get("since", "0") or 0)
            limit = int(request.query.get("limit", "500") or 500)
        except ValueError:
            return web.json_response({"error": "since must be a number (seconds since the epoch) and limit an integer"},
                                     status=400, headers=API_HEADERS)
        limit = max(1, min(limit, 5000))
        return web.json_response(await state.events(since, limit), headers=API_HEADERS)

    async def api_records(request: web.Request) -> web.Response:
        try:
            if view.acls_enabled:
                raise TopicAuthorizationFailedError("the record browser is off on a cluster with ACLs "
                                                    "(authorizer.class.name): it would read around them")
            topic, partition, limit = parse_query(request.query)
            return web.json_response(await reader.last_records(topic, partition, limit), headers=API_HEADERS)
        except KafkaError as exc:
            body, status = error_body(exc)
        except Exception as exc:  # noqa: BLE001 - the page shows a message, not a traceback
            body, status = error_body(UnknownServerError(f"{exc.__class__.__name__}: {exc}"))
            status = 500
        return web.json_response(body, status=status, headers=API_HEADERS)

    async def metrics(request: web.Request) -> web.Response:
        resp = web.Response(text=view.prometheus(), headers=NO_CACHE)
        resp.headers["Content-Type"] = PROMETHEUS_CONTENT_TYPE
        return resp

    app.router.add_get("/", authenticated(index))
    app.router.add_get("/index.html", authenticated(index))
    app.router.add_get("/api/state", authenticated(api_state))
    app.router.add_get("/api/events", authenticated(api_events))
    app.router.add_get("/api/records", authenticated(api_records))
    app.router.add_get("/metrics", metrics)
    app.router.add_static("/static/", STATIC_DIR, show_index=False)
