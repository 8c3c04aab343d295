"""Kafka's ``listeners`` / ``advertised.listeners`` / ``inter.broker.listener.name``.

A broker has four listeners with fixed names; the name says which protocol it speaks:

=================  =============  ==================================================
name               protocol       flag shorthands
=================  =============  ==================================================
``INTERNAL``       msgpack/HTTP   ``--listen`` / ``--advertise`` (required)
``EXTERNAL``       msgpack/HTTP   ``--listen-external`` / ``--advertise-external``
``KAFKA``          Kafka binary   ``--kafka-listen`` / ``--kafka-advertise``
``KAFKA_EXTERNAL`` Kafka binary   ``--kafka-listen-external`` / ``--kafka-advertise-external``
=================  =============  ==================================================

Other names (Kafka's ``PLAINTEXT://``, ``SSL://``, custom ones) are refused: each name's
security protocol comes from ``listener.security.protocol.map``, which already covers
exactly these four (a name it leaves out is PLAINTEXT), so Kafka's rule "every listener
name is in the map" always holds.

The rules (Kafka's, where Kafka has one):

* ``listeners`` and ``advertised.listeners`` are ``NAME://HOST:PORT`` items separated by
  commas; a name at most once, a port at most once (``[::1]`` for an IPv6 host).
* ``advertised.listeners`` names only listeners the broker has, and never advertises a
  wildcard host (``0.0.0.0``, ``::``) or an empty one.
* A listener that ``advertised.listeners`` leaves out (or all, when it is unset)
  advertises its ``listeners`` address; when that binds every interface (empty host,
  ``0.0.0.0``, ``::``) it advertises the machine's host name (``hostname``; Kafka uses the
  canonical host name), which the other hosts must resolve.
* ``inter.broker.listener.name`` (default ``INTERNAL``) must be ``INTERNAL``: brokers and
  the controller talk msgpack/HTTP, so the Kafka listeners cannot carry it, and EXTERNAL
  is the optional client listener for outside the brokers' network, while INTERNAL is
  the msgpack/HTTP endpoint every broker has and registers as ``host``/``port``.
* The same holds for a ``--listen``, ``--listen-external`` or ``--kafka-listen-external``
  flag that binds every interface without its ``--...advertise`` flag; ``--kafka-listen``
  then advertises the INTERNAL listener's advertised host instead.
* The flags are shorthands.  A flag and the setting for the same listener must say the
  same address, and with ``listeners`` set, a ``--...listen`` flag must name a listener it
  lists; a flag only fills in what the settings leave unsaid.

Pure: :func:`resolve` takes the host name as an argument.
"""
from __future__ import annotations

from typing import Any, Mapping

from .errors import InvalidConfigError

LISTENER_NAMES = ("INTERNAL", "EXTERNAL", "KAFKA", "KAFKA_EXTERNAL")
PROTOCOL_OF_LISTENER = {"INTERNAL": "msgpack/HTTP", "EXTERNAL": "msgpack/HTTP",
                        "KAFKA": "Kafka binary", "KAFKA_EXTERNAL": "Kafka binary"}
INTER_BROKER_LISTENER = "INTERNAL"
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
# listener name -> (its listen flag, its advertise flag)
FLAGS = {"INTERNAL": ("--listen", "--advertise"), "EXTERNAL": ("--listen-external", "--advertise-external"),
         "KAFKA": ("--kafka-listen", "--kafka-advertise"),
         "KAFKA_EXTERNAL": ("--kafka-listen-external", "--kafka-advertise-external")}

HostPort = tuple[str, int]


def parse_endpoints(text: str) -> dict[str, HostPort]:
    """``"INTERNAL://0.0.0.0:19092,KAFKA://h:29092"`` -> ``{name: (host, port)}`` in order.

    Raises ValueError (in words) on a malformed item, an unknown name, a name or a port
    given twice."""
    out: dict[str, HostPort] = {}
    ports: dict[int, str] = {}
    for item in (p.strip() for p in str(text).split(",")):
        if not item:
            continue
        name, sep, rest = item.partition("://")
        name = name.strip().upper()
        host, colon, port = rest.rpartition(":")
        if not sep or not colon or not port.isdigit() or not 0 < int(port) < 65536 or "/" in rest:
            raise ValueError(f"expected NAME://HOST:PORT items separated by commas, got {item!r}")
        if name not in LISTENER_NAMES:
            raise ValueError(f"unknown listener name {name!r}: the names are {', '.join(LISTENER_NAMES)} "
                             f"(INTERNAL and EXTERNAL speak msgpack/HTTP, KAFKA and KAFKA_EXTERNAL Kafka's "
                             f"binary protocol; listener.security.protocol.map gives each its security)")
        if name in out:
            raise ValueError(f"listener {name} is given twice")
        if int(port) in ports:
            raise ValueError(f"port {port} is given twice ({ports[int(port)]} and {name}): each listener needs "
                             f"a port of its own")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        out[name] = (host, int(port))
        ports[int(port)] = name
    return out


def format_endpoints(endpoints: Mapping[str, HostPort]) -> str:
    """The inverse of :func:`parse_endpoints`, in the fixed order of the names."""
    def host(h: str) -> str:
        return f"[{h}]" if ":" in h else h
    return ",".join(f"{n}://{host(endpoints[n][0])}:{endpoints[n][1]}" for n in LISTENER_NAMES if n in endpoints)


def parse_listeners(text: str) -> str | None:
    """The ``listeners`` setting, checked and written in the fixed order; "" is unset."""
    endpoints = parse_endpoints(text)
    return format_endpoints(endpoints) if endpoints else None


def parse_advertised_listeners(text: str) -> str | None:
    """The ``advertised.listeners`` setting: as ``listeners``, and no wildcard host."""
    endpoints = parse_endpoints(text)
    for name, (host, _port) in endpoints.items():
        if host in WILDCARD_HOSTS:
            raise ValueError(f"{name} advertises {host or 'an empty host'!s}, which no other host can connect "
                             f"to: advertise the host name or IP others use")
    return format_endpoints(endpoints) if endpoints else None


def parse_inter_broker_listener_name(text: str) -> str:
    """``inter.broker.listener.name``: INTERNAL is the only valid value (see the module doc)."""
    name = str(text).strip().upper()
    if name == INTER_BROKER_LISTENER:
        return name
    if name in ("KAFKA", "KAFKA_EXTERNAL"):
        why = f"{name} speaks Kafka's binary protocol, and brokers and the controller talk msgpack/HTTP"
    elif name == "EXTERNAL":
        why = ("EXTERNAL is the optional listener for clients outside the brokers' network; brokers and the "
               "controller use the msgpack/HTTP listener every broker registers")
    else:
        why = f"unknown listener {name!r} (the names are {', '.join(LISTENER_NAMES)})"
    raise ValueError(f"{why}: the inter-broker listener must be INTERNAL")


def resolve(settings: Mapping[str, Any], flags: Mapping[str, tuple[HostPort | None, HostPort | None]],
            host_name: str) -> dict[str, tuple[HostPort, HostPort | None]]:
    """Each listener's (listen, advertised) endpoint from the checked settings and the flags.

    ``settings`` holds ``listeners`` / ``advertised.listeners`` (text as
    :func:`parse_listeners` returns it, or None); ``flags`` maps a listener name to its
    (``--...listen``, ``--...advertise``) values, None where a flag is not given.  The
    advertised endpoint is None where neither says one and the listen address came from a
    flag (BrokerConfig's defaults then apply, as before the settings existed).  Raises
    INVALID_CONFIG (one line naming the rule) on a conflict."""
    listeners = parse_endpoints(settings.get("listeners") or "")
    advertised = parse_endpoints(settings.get("advertised.listeners") or "")
    out: dict[str, tuple[HostPort, HostPort | None]] = {}
    for name in LISTENER_NAMES:
        listen_flag, advertise_flag = FLAGS[name]
        flag_listen, flag_adv = flags.get(name, (None, None))
        listen = listeners.get(name)
        if flag_listen is not None:
            if listeners and listen is None:
                raise InvalidConfigError(f"{listen_flag} {_hp(flag_listen)} is the {name} listener, which listeners "
                                         f"({format_endpoints(listeners)}) leaves out: add it there or drop the flag")
            if listen is not None and _same(listen, flag_listen) is False:
                raise InvalidConfigError(f"{listen_flag} {_hp(flag_listen)} disagrees with listeners' "
                                         f"{name}://{_hp(listen)}: give one of them")
        adv = advertised.get(name)
        if flag_adv is not None and adv is not None and flag_adv != adv:
            raise InvalidConfigError(f"{advertise_flag} {_hp(flag_adv)} disagrees with advertised.listeners' "
                                     f"{name}://{_hp(adv)}: give one of them")
        from_settings = listen is not None
        listen = listen or flag_listen
        adv = adv or flag_adv
        if listen is None:
            if adv is not None and name not in advertised:
                raise InvalidConfigError(f"{advertise_flag} {_hp(adv)} needs the {name} listener ({listen_flag} "
                                         f"HOST:PORT or listeners={name}://HOST:PORT)")
            if adv is not None:
                raise InvalidConfigError(f"advertised.listeners names {name}, which the broker does not listen on "
                                         f"(advertised.listeners must be a subset of listeners)")
            continue
        if adv is None and from_settings:
            host = listen[0] if listen[0] not in WILDCARD_HOSTS else host_name
            adv = (host, listen[1])
        elif adv is None and listen[0] in WILDCARD_HOSTS and name != "KAFKA":
            # a flag binding every interface: advertise the host name, never 0.0.0.0 (the
            # KAFKA flag's default is the INTERNAL listener's advertised host instead)
            adv = (host_name, listen[1])
        out[name] = (listen, adv)
    if INTER_BROKER_LISTENER not in out:
        raise InvalidConfigError("the broker needs an INTERNAL listener, the one brokers and the controller use "
                                 "(inter.broker.listener.name): listeners=INTERNAL://HOST:PORT or --listen HOST:PORT")
    return out


def _same(a: HostPort, b: HostPort) -> bool:
    """Same address (an empty host and 0.0.0.0 both bind every interface)."""
    def norm(h: str) -> str:
        return "0.0.0.0" if h == "" else h
    return norm(a[0]) == norm(b[0]) and a[1] == b[1]


def _hp(hp: HostPort) -> str:
    return f"[{hp[0]}]:{hp[1]}" if ":" in hp[0] else f"{hp[0]}:{hp[1]}"
