"""``minikafka``: the command line.

Subcommands: ``zookeeper`` and ``broker`` run one server in the foreground;
``cluster up|status|down|kill|start|stop|resume`` manage a local cluster in a
folder; ``topics``, ``produce``, ``consume`` (from :mod:`.client_commands`), ``groups``
(:mod:`.group_commands`) and ``acls`` (:mod:`.acl_commands`) talk to brokers, with
``--command-config FILE`` for a secured listener (:mod:`.command_config`).

Errors: a user mistake (bad arguments, a ClientError, a Kafka error) prints one
line ``minikafka: error: ...`` on stderr and exits 2, never a traceback.
Ctrl-C exits 130, except where it is the normal end of a command: ``consume`` (after
its "Processed a total of N messages" line) and ``--watch`` exit 0.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
from typing import Sequence

from ..config import BrokerConfig, parse_overrides
from ..errors import ClientError, InvalidConfigError, KafkaError, NetworkExceptionError
from . import acl_commands, bench, client_commands, fault_commands, group_commands, kafka_spellings, listener_probe, reference_commands, scenario, sim, spark_commands, txn_commands, watch
from .common import broker_id, merge_named

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
DEFAULT_DIR = ".minikafka"


class UsageError(Exception):
    """Bad command-line arguments (raised by :meth:`ArgumentParser.error`)."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse that reports mistakes as one line instead of usage text and exit.

    An unknown flag is reported by the (sub)command that was given it, so the line points
    to that command's ``--help`` (``minikafka topics describe --help``), and a mistyped
    flag or subcommand gets the closest known one (``did you mean --partitions?``)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m is not None:
            choices = re.findall(r"'([^']*)'", m.group(2))
            message += _did_you_mean(m.group(1), choices)
        elif "required" in message:  # a mistyped required flag reads as a missing one: name the typo
            unknown = [a.split("=", 1)[0] for a in getattr(self, "_given", ()) if a.startswith("--")
                       and a.split("=", 1)[0] not in self._option_string_actions]
            if unknown:
                message += f"; {unknown[0]} is not an option{_did_you_mean(unknown[0], self._flags())}"
        raise UsageError(f"{message} (see `{self.prog} --help`)")

    def _flags(self) -> list[str]:
        return [f for f in self._option_string_actions if f.startswith("--")]

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        self._given = list(sys.argv[1:] if args is None else args)
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            first = next((e for e in extras if e.startswith("-")), None)
            hint = "" if first is None else _did_you_mean(first.split("=", 1)[0], self._flags())
            self.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
        return parsed, extras


def _did_you_mean(word: str, known: Sequence[str]) -> str:
    """``"; did you mean X?"`` for the known word closest to ``word`` (nothing when none is close)."""
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _one_line(text: str) -> str:
    return " ".join(str(text).split()) or "unknown error"


def fail(message: str) -> None:
    """Print ``minikafka: error: MESSAGE`` as one line on stderr."""
    print(f"minikafka: error: {_one_line(message)}", file=sys.stderr, flush=True)


def host_port(text: str) -> tuple[str, int]:
    """argparse type for ``HOST:PORT``."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def positive_int(text: str) -> int:
    """argparse type for an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def port_number(text: str) -> int:
    """argparse type for a TCP port."""
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {value}")
    return value


# ---------------------------------------------------------------- zookeeper / broker

def cmd_zookeeper(args: argparse.Namespace) -> int:
    """Run a standalone ZooKeeper, or one member of an ensemble, in the foreground."""
    from ..zk.launcher import parse_server, run_foreground

    if args.server:
        try:
            ids = [parse_server(spec)[0] for spec in args.server]
        except ValueError as exc:
            raise ClientError(f"--server: {exc}") from None
        if args.server_id is None or args.server_id not in ids:
            raise ClientError(f"--server-id must be one of the --server ids ({', '.join(map(str, ids))})")
    elif args.server_id is not None:
        raise ClientError("--server-id needs the ensemble's --server lines")
    return run_foreground(args.port, args.data_dir, args.bind, server_id=args.server_id, servers=args.server or None)


def broker_config(args: argparse.Namespace, read_secret: bool = True) -> BrokerConfig:
    """The BrokerConfig the ``broker`` arguments describe (raises INVALID_CONFIG).

    The listeners come from ``listeners`` / ``advertised.listeners`` (config file or
    ``--config``) and from the ``--listen``... flags, their shorthands
    (:func:`minikafka.listener_spec.resolve` refuses the two disagreeing)."""
    import socket

    from ..config import broker_setting
    from ..listener_spec import resolve

    settings = {**config_file_settings(args.config_file), **parse_overrides(args.config)}
    checked = {k: broker_setting(k, settings[k]) for k in ("listeners", "advertised.listeners",
                                                            "inter.broker.listener.name") if k in settings}
    flags = {"INTERNAL": (args.listen, args.advertise), "EXTERNAL": (args.listen_external, args.advertise_external),
             "KAFKA": (args.kafka_listen, args.kafka_advertise),
             "KAFKA_EXTERNAL": (args.kafka_listen_external, args.kafka_advertise_external)}
    endpoints = resolve(checked, flags, socket.gethostname())

    def fields(name: str, prefix: str) -> dict:
        listen, adv = endpoints.get(name, (None, None))
        return {f"{prefix}listen_host": None if listen is None else (listen[0] or "0.0.0.0"),
                f"{prefix}listen_port": None if listen is None else listen[1],
                f"{prefix}advertised_host": None if adv is None else adv[0],
                f"{prefix}advertised_port": None if adv is None else adv[1]}

    return BrokerConfig(
        broker_id=args.id, zookeeper_connect=args.zookeeper,
        **fields("INTERNAL", ""), **fields("EXTERNAL", "external_"), **fields("KAFKA", "kafka_"),
        **fields("KAFKA_EXTERNAL", "kafka_external_"),
        data_dir=args.data_dir, storage=args.storage, settings=settings,
        cluster_secret=cluster_secret(args.cluster_secret_file) if read_secret else None,
    )


def _credential_source(args: argparse.Namespace) -> str:
    if args.cluster_secret_file is not None:
        return f"cluster credential from {args.cluster_secret_file}"
    if os.environ.get("MINIKAFKA_CLUSTER_SECRET", "").strip():
        return "cluster credential from MINIKAFKA_CLUSTER_SECRET"
    return "no cluster credential (controller and replica requests unchecked)"


def config_file_settings(path: str | None) -> dict[str, str]:
    """The ``key=value`` lines of ``--config-file`` (Kafka's server.properties; ``#`` and ``!``
    start comments).  Secrets (ssl.key.password...) go there rather than on the command
    line, which every local user can read (``ps``)."""
    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line.strip() for line in f]
    except OSError as exc:
        raise InvalidConfigError(f"cannot read --config-file {path}: {exc.strerror or exc}") from None
    return parse_overrides([line for line in lines if line and not line.startswith(("#", "!"))])


def cluster_secret(path: str | None) -> str | None:
    """The cluster credential from ``--cluster-secret-file`` or MINIKAFKA_CLUSTER_SECRET."""
    if path is not None:
        try:
            with open(path, encoding="utf-8") as f:
                secret = f.read().strip()
        except OSError as exc:
            raise InvalidConfigError(f"cannot read --cluster-secret-file {path}: {exc.strerror or exc}") from None
        if not secret:
            raise InvalidConfigError(f"--cluster-secret-file {path} is empty")
        return secret
    return os.environ.get("MINIKAFKA_CLUSTER_SECRET", "").strip() or None


def cmd_broker(args: argparse.Namespace) -> int:
    """Run one broker in the foreground (or only check its configuration)."""
    cfg = broker_config(args, read_secret=not args.check_config)
    if cfg.get("zookeeper.set.acl") and cfg.cluster_secret is None and not args.check_config:
        raise InvalidConfigError("zookeeper.set.acl=true needs the cluster credential "
                                 "(--cluster-secret-file or MINIKAFKA_CLUSTER_SECRET)")
    if args.check_config:
        host, port = cfg.advertised
        overrides = len(args.config)
        external = ""
        if cfg.advertised_external is not None:
            ext_host, ext_port = cfg.advertised_external
            external = (f" and {cfg.external_listen_host}:{cfg.external_listen_port} "
                        f"(external, advertised {ext_host}:{ext_port})")
        if cfg.advertised_kafka is not None:
            k_host, k_port = cfg.advertised_kafka
            external += (f", Kafka protocol on {cfg.kafka_listen_host or cfg.listen_host}:{cfg.kafka_listen_port} "
                         f"(advertised {k_host}:{k_port})")
        if cfg.advertised_kafka_external is not None:
            k_host, k_port = cfg.advertised_kafka_external
            external += (f" and {cfg.kafka_external_listen_host or cfg.kafka_listen_host or cfg.listen_host}:"
                         f"{cfg.kafka_external_listen_port} (external, advertised {k_host}:{k_port})")
        print(f"config ok: broker {cfg.broker_id} listens on {cfg.listen_host}:{cfg.listen_port} "
              f"(advertised {host}:{port}){external}, zookeeper {cfg.zookeeper_connect}, storage {cfg.storage}, "
              f"data dir {cfg.data_dir}, {overrides} override{'s' if overrides != 1 else ''}, "
              f"{_credential_source(args)}")
        from ..listener_spec import format_endpoints

        resolved = cfg.listener_endpoints()
        print(f"listeners={format_endpoints({n: e[0] for n, e in resolved.items()})}")
        print(f"advertised.listeners={format_endpoints({n: e[1] for n, e in resolved.items()})}")
        print(f"inter.broker.listener.name={cfg.get('inter.broker.listener.name')}")
        print(f"listener.security.protocol.map={cfg.get('listener.security.protocol.map')}")
        return 0
    from ..broker.main import run_broker

    return run_broker(cfg)


# ---------------------------------------------------------------- cluster

def _dir_flag(args: argparse.Namespace) -> str:
    return "" if args.dir == DEFAULT_DIR else f" --dir {args.dir}"


def _earlier_storage(dir: str) -> str | None:
    """The storage of the cluster recorded in ``dir`` earlier, if any."""
    from ..cluster.state import exists, load

    try:
        return load(dir).storage if exists(dir) else None
    except Exception:  # an unreadable record: nothing to say about it
        return None


def cmd_cluster_up(args: argparse.Namespace) -> int:
    """Start ZooKeeper and N brokers in the background and print their endpoints."""
    from ..cluster import launcher

    if args.fresh:
        wiped = launcher.wipe(args.dir)
        if wiped:
            print(f"--fresh: deleted {', '.join(wiped)} of the earlier cluster in {args.dir}", flush=True)
    elif args.storage == "disk":
        left = launcher.leftovers(args.dir, args.brokers, external_zookeeper=bool(args.zookeeper))
        if left:
            print(f"reusing {', '.join(left)} of an earlier cluster in {args.dir}: its topics, offsets and "
                  f"records come back (start anew with --fresh)", flush=True)
    elif _earlier_storage(args.dir) == "disk":
        left = launcher.leftovers(args.dir, args.brokers, external_zookeeper=bool(args.zookeeper))
        if left:
            print(f"starting anew: --storage memory deletes {', '.join(left)} of the earlier disk cluster in "
                  f"{args.dir} (keep them with --storage disk)", flush=True)
    state = launcher.up(
        args.dir, brokers=args.brokers, zookeeper_port=args.zookeeper_port, base_port=args.base_port,
        zookeeper=args.zookeeper, storage=args.storage, broker_configs=parse_overrides(args.config),
        timeout_s=args.timeout, on_progress=lambda message: print(f"{message} ...", flush=True),
        kafka_base_port=args.kafka_base_port, kafka=not args.no_kafka, zookeeper_acl=not args.no_zookeeper_acl,
        on_warning=lambda message: print(f"minikafka: warning: {message}", file=sys.stderr, flush=True),
        zookeeper_nodes=args.zookeeper_nodes, zookeeper_chroot=args.zookeeper_chroot,
    )
    zk = state.zookeeper
    if zk.servers:
        for server in zk.servers:
            print(f"zookeeper {server.id} 127.0.0.1:{server.client_port:<12} pid {server.pid}")
        print(f"zookeeper.connect: {zk.connect}")
    else:
        zk_note = "external" if zk.external else f"pid {zk.pid}"
        print(f"zookeeper   {zk.connect:<22} {zk_note}")
    for bid, b in sorted(state.brokers.items()):
        kafka = f"  kafka {b.kafka_endpoint}" if b.kafka_endpoint else ""
        print(f"broker {bid:<4} {b.endpoint:<22} pid {b.pid:<8} dashboard http://{b.host}:{b.port}/{kafka}")
    print(f"bootstrap servers: {','.join(b.endpoint for _, b in sorted(state.brokers.items()))}")
    if any(b.kafka_endpoint for b in state.brokers.values()):
        kafka_bootstrap = ",".join(b.kafka_endpoint or "" for _, b in sorted(state.brokers.items()))
        print(f"Kafka clients (kcat, kafka-python, confluent-kafka, Spark): bootstrap.servers={kafka_bootstrap}")
    print(f"logs: {args.dir}/*.log   storage: {state.storage}")
    print(f"stop it with: minikafka cluster down{_dir_flag(args)}")
    return 0


def _yes_no(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "no")


def cmd_cluster_status(args: argparse.Namespace) -> int:
    """Print the cluster's processes and what ZooKeeper says about them."""
    from ..cluster import launcher

    st = launcher.status(args.dir)
    # exit status 1 when nothing of the cluster runs (a script can test it), 0 otherwise
    code = 0 if st["running"] else 1
    if args.json:
        print(json.dumps(st, indent=2))
        return code
    zk = st["zookeeper"]
    serving = "serving" if zk["serving"] else "NOT answering"
    pid = f"pid {zk['pid']}" if zk["pid"] else "no pid"
    print(f"zookeeper {zk['connect']}  {pid}  {zk['process']}  {serving}")
    if len(st["zookeeper_servers"]) > 1:
        for server in st["zookeeper_servers"]:
            print(f"  zookeeper server {server['id']}  127.0.0.1:{server['client_port']}  "
                  f"pid {server['pid'] or '-'}  {server['mode']}")
    if st["controller"] is not None:
        print(f"controller: broker {st['controller']} (controller epoch {st['controller_epoch']})")
    elif zk["serving"]:
        print("controller: none elected")
    rows = [("BROKER", "PID", "PROCESS", "REGISTERED", "CONTROLLER", "ENDPOINT", "KAFKA")]
    for b in st["brokers"]:
        rows.append((str(b["id"]), str(b["pid"] or "-"), b["process"], _yes_no(b["registered"]),
                     _yes_no(b["controller"]), b["endpoint"], b.get("kafka_endpoint") or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    if not st["running"]:
        print(f"the cluster in {os.path.abspath(args.dir)} is down: start it with `minikafka cluster up{_dir_flag(args)}`")
    return code


def status_view(st: dict) -> watch.View:
    """``cluster status --watch``: ZooKeeper and the controller, then one row per broker."""
    zk = st["zookeeper"]
    controller = "-" if st["controller"] is None else str(st["controller"])
    if st["controller"] is None and zk["serving"]:
        controller = "none elected"
    zk_grid = watch.Grid("zookeeper", [
        watch.Column("ZOOKEEPER", ratio=2, min_width=9), watch.Column("PID"), watch.Column("PROCESS"),
        watch.Column("ZK STATE"), watch.Column("CONTROLLER"), watch.Column("CTRL EPOCH"),
    ], [("zookeeper", (zk["connect"], str(zk["pid"] or "-"), zk["process"],
                       "serving" if zk["serving"] else "NOT answering", controller,
                       "-" if st["controller_epoch"] is None else str(st["controller_epoch"])))]
       + [(f"zookeeper-{s['id']}", (f"  server {s['id']} 127.0.0.1:{s['client_port']}", str(s["pid"] or "-"),
                                    "running" if s["pid"] else "dead", s["mode"], "", ""))
          for s in st.get("zookeeper_servers", []) if len(st.get("zookeeper_servers", [])) > 1])
    brokers = watch.Grid("brokers", [
        watch.Column("BROKER"), watch.Column("PID"), watch.Column("PROCESS"), watch.Column("REGISTERED"),
        watch.Column("CTRL"), watch.Column("ENDPOINT", ratio=1, min_width=8),
        watch.Column("KAFKA", ratio=1, min_width=8),
    ], [(b["id"], (str(b["id"]), str(b["pid"] or "-"), b["process"], _yes_no(b["registered"]),
                   _yes_no(b["controller"]), b["endpoint"], b.get("kafka_endpoint") or "-"))
        for b in st["brokers"]], empty="no brokers recorded")
    return watch.View([zk_grid, brokers])


def _cluster_status_view(args: argparse.Namespace) -> tuple[watch.View, dict]:
    from ..cluster import launcher

    st = launcher.status(args.dir)
    return status_view(st), st


def cmd_cluster_down(args: argparse.Namespace) -> int:
    """Stop every process of the cluster; keep its folder and logs."""
    from ..cluster import launcher
    from ..cluster.state import exists

    if not exists(args.dir):
        raise ClientError(f"no cluster in {args.dir}: nothing to stop")
    results = launcher.down(args.dir)
    for name, outcome in results.items():
        print(f"{name}: {outcome}")
    print(f"cluster in {args.dir} is down (logs kept)")
    return 0


def cmd_cluster_kill(args: argparse.Namespace) -> int:
    """Send a signal to one broker."""
    from ..cluster import launcher

    broker_id = args.broker_id
    if broker_id == "controller":
        broker_id = launcher.status(args.dir).get("controller")
        if broker_id is None:
            raise ClientError("no controller is elected right now (see: minikafka cluster status)")
    else:
        try:
            broker_id = int(broker_id)
        except ValueError:
            raise ClientError(f"ID must be a broker id or 'controller', got {args.broker_id!r}") from None
    pid = launcher.kill(args.dir, broker_id, args.signal)
    print(f"sent SIG{args.signal.upper().removeprefix('SIG')} to broker {broker_id} (pid {pid})")
    return 0


def cmd_cluster_start(args: argparse.Namespace) -> int:
    """Restart a broker that was killed or stopped."""
    from ..cluster import launcher

    launcher.check_startable(args.dir, args.broker_id)  # its error alone, without "starting ..."
    print(f"starting broker {args.broker_id} ...", flush=True)
    b = launcher.start(args.dir, args.broker_id, wait=not args.no_wait, timeout_s=args.timeout)
    done = "started" if args.no_wait else "started and registered"
    print(f"broker {args.broker_id} {done} (pid {b.pid}) at {b.endpoint}")
    return 0


def cmd_cluster_zookeeper_kill(args: argparse.Namespace) -> int:
    """SIGKILL one ZooKeeper server."""
    from ..cluster import launcher

    pid = launcher.zookeeper_kill(args.dir, args.server_id)
    print(f"sent SIGKILL to ZooKeeper server {args.server_id} (pid {pid})")
    return 0


def cmd_cluster_zookeeper_start(args: argparse.Namespace) -> int:
    """Restart one ZooKeeper server."""
    from ..cluster import launcher

    server = launcher.zookeeper_start(args.dir, args.server_id, wait=not args.no_wait, timeout_s=args.timeout)
    done = "started" if args.no_wait else "started and serving"
    print(f"ZooKeeper server {args.server_id} {done} (pid {server.pid}) at 127.0.0.1:{server.client_port}")
    return 0


def cmd_cluster_stop(args: argparse.Namespace) -> int:
    """Stop one broker gracefully (SIGTERM)."""
    from ..cluster import launcher

    outcome = launcher.stop(args.dir, args.broker_id)
    print(f"broker {args.broker_id}: {outcome}")
    return 0


def cmd_cluster_resume(args: argparse.Namespace) -> int:
    """Send SIGCONT to a paused broker; a broker that is running is not paused (an error)."""
    from ..cluster import launcher

    b = launcher.load(args.dir).broker(args.broker_id)
    if launcher.proc_state(b.pid) == "running":
        raise ClientError(f"broker {args.broker_id} is not paused (pid {b.pid} is running): nothing to resume")
    pid = launcher.resume(args.dir, args.broker_id)
    print(f"sent SIGCONT to broker {args.broker_id} (pid {pid})")
    return 0


# ---------------------------------------------------------------- parser

def _add_configs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a broker setting under its Kafka name, e.g. replica.lag.time.max.ms=2000 (repeatable)")


def _add_cluster_parsers(sub: argparse._SubParsersAction) -> None:
    cluster = sub.add_parser("cluster", help="run a local cluster of background processes",
                             description="Start, inspect and break a local cluster recorded in a folder.")
    csub = cluster.add_subparsers(dest="cluster_command", metavar="COMMAND", required=True,
                                  parser_class=ArgumentParser)
    dir_parent = ArgumentParser(add_help=False)
    dir_parent.add_argument("--dir", default=DEFAULT_DIR, help=f"cluster folder (default {DEFAULT_DIR})")
    _add_cluster_up_parser(csub, dir_parent)
    _add_cluster_broker_parsers(csub, dir_parent)
    _add_cluster_zookeeper_parsers(csub, dir_parent)


def _add_cluster_up_parser(csub: argparse._SubParsersAction, dir_parent: ArgumentParser) -> None:
    """``cluster up``: the keywords of :func:`minikafka.cluster.launcher.up` as flags."""
    up = csub.add_parser("up", parents=[dir_parent], help="start ZooKeeper and N brokers",
                         description="Start ZooKeeper and N brokers on 127.0.0.1 in the background.")
    up.add_argument("--brokers", type=positive_int, default=3, help="number of brokers (default 3)")
    up.add_argument("--zookeeper-port", type=port_number, default=2181,
                    help="ZooKeeper client port (default 2181); of server 1 in an ensemble")
    up.add_argument("--zookeeper-nodes", type=positive_int, default=1, metavar="N",
                    help="ZooKeeper servers: 1 (default) runs a standalone server, more an ensemble (an odd "
                         "number such as 3 or 5, so that a majority outlives a server's loss) whose other "
                         "ports are free ports chosen at start; the brokers' zookeeper.connect names every "
                         "server")
    up.add_argument("--zookeeper-chroot", metavar="PATH", default="",
                    help="keep the cluster's znodes under PATH (e.g. /kafka) of our ZooKeeper: the brokers' "
                         "zookeeper.connect ends with it, as Kafka's does (HOST:PORT,HOST:PORT/kafka)")
    up.add_argument("--base-port", type=port_number, default=9092,
                    help="port of broker 1; broker N listens on base+N-1 (default 9092); keep the ports below "
                         "32768, where Linux's ephemeral port range starts (cluster up warns when the default "
                         "Kafka ports fall into it)")
    up.add_argument("--kafka-base-port", type=port_number, default=None,
                    help="Kafka binary-protocol port of broker 1, for kcat and Kafka clients; broker N "
                         "uses base+N-1 (default --base-port + 20000: 29092; --base-port - 20000 when "
                         "that passes 65535 or lies in the ephemeral range)")
    up.add_argument("--no-kafka", action="store_true", help="do not open Kafka binary-protocol listeners")
    up.add_argument("--no-zookeeper-acl", action="store_true",
                    help="leave the cluster's znodes open to every ZooKeeper client (by default the brokers "
                         "run with zookeeper.set.acl=true: only holders of the cluster credential may change "
                         "them, everyone may read; see docs/security.md)")
    up.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]", default=None,
                    help="use this running ZooKeeper instead of starting one")
    up.add_argument("--storage", choices=("memory", "disk"), default="memory", help="log storage (default memory)")
    up.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the cluster (default 60)")
    up.add_argument("--fresh", action="store_true",
                    help="start a new cluster: delete the folder's ZooKeeper data and broker logs left by an "
                         "earlier cluster (with --storage disk they are kept and reused otherwise)")
    _add_configs(up)
    up.set_defaults(func=cmd_cluster_up)


def _add_cluster_broker_parsers(csub: argparse._SubParsersAction, dir_parent: ArgumentParser) -> None:
    """``cluster status``, ``down`` and the commands on one broker (kill, start, stop, resume)."""
    status = csub.add_parser("status", parents=[dir_parent], help="show processes, registrations, controller",
                             description="ZooKeeper's process and whether it serves, the controller and its "
                                         "epoch, then one line per broker: pid, process state (running, "
                                         "paused by SIGSTOP, stopped by SIGTERM as `cluster stop`, `cluster "
                                         "down` and `kill --signal TERM` do, dead: killed or crashed), whether "
                                         "it is registered under /brokers/ids, whether it is the controller, and "
                                         "its endpoints. Exit status 1 when none of the cluster's processes "
                                         "runs.")
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    watch.add_flags(status)
    status.set_defaults(func=watch.watchable(cmd_cluster_status, "minikafka cluster status", _cluster_status_view))

    down = csub.add_parser("down", parents=[dir_parent], help="stop every process (logs are kept)",
                           description="Stop the brokers (SIGTERM, SIGKILL after 15 s; the controller last), "
                                       "then ZooKeeper. The folder, its logs and (with --storage disk) the "
                                       "data stay for the next `cluster up`.")
    down.set_defaults(func=cmd_cluster_down)

    kill = csub.add_parser("kill", parents=[dir_parent], help="send SIGKILL (or TERM / STOP) to one broker",
                           description="Crash one broker (SIGKILL), shut it down in a controlled way (SIGTERM) "
                                       "or freeze it (SIGSTOP, undone by `cluster resume`).")
    kill.add_argument("broker_id", metavar="ID", help="a broker id, or 'controller' for the current controller")
    kill.add_argument("--signal", default="KILL", type=str.upper, choices=("KILL", "TERM", "STOP"),
                      help="KILL (crash, default), TERM (controlled shutdown) or STOP (freeze; see resume)")
    kill.set_defaults(func=cmd_cluster_kill)

    start = csub.add_parser("start", parents=[dir_parent], help="restart a killed or stopped broker",
                            description="Start a broker that was killed or stopped again, with the command "
                                        "line it was first started with (its log is appended to), and wait "
                                        "until it has registered in ZooKeeper and answers.")
    start.add_argument("broker_id", type=broker_id, metavar="ID", help="the broker id (broker.id), e.g. 2")
    start.add_argument("--no-wait", action="store_true", help="do not wait for it to register")
    start.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for it (default 60)")
    start.set_defaults(func=cmd_cluster_start)

    stop = csub.add_parser("stop", parents=[dir_parent], help="stop one broker gracefully (SIGTERM)",
                           description="Stop one broker with SIGTERM: a controlled shutdown that moves its "
                                       "leaderships away first (SIGKILL after 15 s). `cluster start` brings it "
                                       "back.")
    stop.add_argument("broker_id", type=broker_id, metavar="ID", help="the broker id (broker.id), e.g. 2")
    stop.set_defaults(func=cmd_cluster_stop)

    resume = csub.add_parser("resume", parents=[dir_parent], help="SIGCONT a broker frozen with kill --signal STOP",
                             description="Let a broker frozen with `cluster kill ID --signal STOP` run again "
                                         "(SIGCONT). A broker that is not paused is an error.")
    resume.add_argument("broker_id", type=broker_id, metavar="ID", help="the broker id (broker.id), e.g. 2")
    resume.set_defaults(func=cmd_cluster_resume)


def _add_cluster_zookeeper_parsers(csub: argparse._SubParsersAction, dir_parent: ArgumentParser) -> None:
    """``cluster zookeeper kill`` and ``cluster zookeeper start`` (one server)."""
    zk = csub.add_parser("zookeeper", help="kill or restart one ZooKeeper server",
                         description="Crash (SIGKILL) or restart one server of the cluster's ZooKeeper, by its "
                                     "id (1..N of `cluster up --zookeeper-nodes N`; a single ZooKeeper is 1). "
                                     "`cluster status` shows each server's mode.")
    zsub = zk.add_subparsers(dest="zookeeper_command", metavar="COMMAND", required=True, parser_class=ArgumentParser)
    zkill = zsub.add_parser("kill", parents=[dir_parent], help="SIGKILL one ZooKeeper server",
                            description="SIGKILL one ZooKeeper server by its recorded pid; its data stays.")
    zkill.add_argument("server_id", type=positive_int, metavar="ID", help="the server id (its myid), e.g. 2")
    zkill.set_defaults(func=cmd_cluster_zookeeper_kill)
    zstart = zsub.add_parser("start", parents=[dir_parent], help="restart a killed ZooKeeper server",
                             description="Start a killed ZooKeeper server again with its recorded command line "
                                         "and data, and wait until it serves (rejoined the quorum).")
    zstart.add_argument("server_id", type=positive_int, metavar="ID", help="the server id (its myid), e.g. 2")
    zstart.add_argument("--no-wait", action="store_true", help="do not wait for it to serve")
    zstart.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for it (default 60)")
    zstart.set_defaults(func=cmd_cluster_zookeeper_start)


# The end of `minikafka --help`: where a newcomer starts (each line a command that parses).
FIRST_STEPS = """first steps:
  minikafka cluster up                  ZooKeeper on 2181, brokers 1-3 on 9092-9094 (Kafka
                                        protocol on 29092-29094); dashboard http://127.0.0.1:9092/
  minikafka topics create orders --partitions 3 --replication-factor 3
  seq 1 100 | minikafka produce orders --acks all
  minikafka consume orders --from-beginning --max-messages 5
  minikafka cluster kill 1              kill -9 broker 1: watch the failover with
  minikafka topics describe orders      new leaders and leader epochs, ISR without broker 1
  minikafka cluster start 1             it comes back, catches up and rejoins the ISR
  minikafka cluster down

`minikafka COMMAND --help` explains each command; README.md and docs/tutorial.md walk through them."""


def build_parser() -> ArgumentParser:
    """The full ``minikafka`` argument parser."""
    from .. import __version__

    parser = ArgumentParser(prog="minikafka", description="A mini Kafka cluster with a real ZooKeeper.",
                            epilog=FIRST_STEPS, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"minikafka {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=ArgumentParser)
    _add_zookeeper_parser(sub)
    _add_broker_parser(sub)
    _add_cluster_parsers(sub)
    client_commands.add_parsers(sub)
    group_commands.add_parsers(sub)
    txn_commands.add_parsers(sub)
    acl_commands.add_parsers(sub)
    bench.add_parsers(sub)
    scenario.add_parsers(sub)
    sim.add_parsers(sub)
    reference_commands.add_parsers(sub)
    spark_commands.add_parsers(sub)
    fault_commands.add_parsers(sub)
    return parser


def _add_zookeeper_parser(sub: argparse._SubParsersAction) -> None:
    zk = sub.add_parser("zookeeper", help="run a standalone ZooKeeper (or an ensemble member) in the foreground",
                        description="Run a standalone Apache ZooKeeper (Java: the jars of the spark extra's "
                                    "pyspark wheel, or Debian's zookeeper package) on 127.0.0.1 (or --bind) in the "
                                    "foreground, until Ctrl-C, or with --server-id and --server lines one member "
                                    "of an ensemble; `cluster up` starts them by itself.")
    zk.add_argument("--port", type=port_number, default=2181, help="client port (default 2181)")
    zk.add_argument("--bind", default="127.0.0.1", metavar="ADDRESS",
                    help="address to serve clients on (ZooKeeper's clientPortAddress; default 127.0.0.1, "
                         "loopback only): this host's IP, or 0.0.0.0, for brokers on other hosts")
    zk.add_argument("--data-dir", default=os.path.join(DEFAULT_DIR, "zookeeper"),
                    help="snapshots, transaction logs and zoo.cfg (default .minikafka/zookeeper)")
    zk.add_argument("--server-id", type=positive_int, default=None, metavar="N",
                    help="this server's id (its myid) in the ensemble the --server lines describe")
    zk.add_argument("--server", action="append", default=[], metavar="N=HOST:PEER_PORT:ELECTION_PORT",
                    help="one ensemble member, zoo.cfg's server.N line (repeat for each, this one included); "
                         "without it the server is standalone")
    zk.set_defaults(func=cmd_zookeeper)


def _add_broker_parser(sub: argparse._SubParsersAction) -> None:
    broker = sub.add_parser("broker", help="run one broker in the foreground",
                            description="Run one broker in the foreground: it registers under /brokers/ids in "
                                        "ZooKeeper, takes part in the controller election and serves clients "
                                        "until SIGTERM or Ctrl-C (a controlled shutdown). `--check-config` "
                                        "only checks the command line.")
    broker.add_argument("--id", type=broker_id, required=True, help="broker id (broker.id)")
    broker.add_argument("--zookeeper", required=True, metavar="HOST:PORT[/CHROOT]", help="ZooKeeper to register with")
    broker.add_argument("--listen", type=host_port, default=None, metavar="HOST:PORT",
                        help="address to serve on: the INTERNAL listener (msgpack/HTTP, used by brokers and the "
                             "controller); a shorthand for listeners=INTERNAL://HOST:PORT, one of the two is needed")
    broker.add_argument("--advertise", type=host_port, default=None, metavar="HOST:PORT",
                        help="address other brokers and clients use (default: --listen); a shorthand for "
                             "advertised.listeners=INTERNAL://HOST:PORT")
    broker.add_argument("--listen-external", type=host_port, default=None, metavar="HOST:PORT",
                        help="a second address to serve on, for clients outside the brokers' network "
                             "(Kafka's EXTERNAL listener; its own port)")
    broker.add_argument("--advertise-external", type=host_port, default=None, metavar="HOST:PORT",
                        help="address clients use for the external listener (default: --listen-external); "
                             "Metadata asked on it answers every broker's external address")
    broker.add_argument("--kafka-listen", type=host_port, default=None, metavar="HOST:PORT",
                        help="serve Kafka's binary protocol here too, for kcat, kafka-python, "
                             "confluent-kafka, aiokafka and Spark (off by default)")
    broker.add_argument("--kafka-advertise", type=host_port, default=None, metavar="HOST:PORT",
                        help="address Kafka clients use for --kafka-listen (default: its port on "
                             "--advertise's host when --kafka-listen binds 0.0.0.0)")
    broker.add_argument("--kafka-listen-external", type=host_port, default=None, metavar="HOST:PORT",
                        help="a second Kafka-protocol address, for Kafka clients outside the brokers' network")
    broker.add_argument("--kafka-advertise-external", type=host_port, default=None, metavar="HOST:PORT",
                        help="address Kafka clients use for --kafka-listen-external (default: that address)")
    broker.add_argument("--data-dir", required=True, help="checkpoint files (and logs with --storage disk)")
    broker.add_argument("--storage", choices=("memory", "disk"), default="memory", help="log storage (default memory)")
    _add_configs(broker)
    broker.add_argument("--config-file", default=None, metavar="FILE",
                        help="broker settings as key=value lines (Kafka's server.properties); --config wins. "
                             "Give passwords (ssl.key.password) here: the command line is visible to every user")
    broker.add_argument("--cluster-secret-file", default=None, metavar="FILE",
                        help="the cluster credential that controller and replica requests must carry (default: "
                             "$MINIKAFKA_CLUSTER_SECRET; unset: not checked; see docs/security.md)")
    broker.add_argument("--check-config", action="store_true", help="check the configuration, print it and exit")
    broker.set_defaults(func=cmd_broker)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``minikafka`` command; return its exit status."""
    parser = build_parser()
    args = None
    try:
        args = parser.parse_args(kafka_spellings.translate(sys.argv[1:] if argv is None else argv))
        merge_named(args)
        return int(args.func(args) or 0)
    except UsageError as exc:
        fail(str(exc))
        return EXIT_USAGE
    except NetworkExceptionError as exc:
        # no broker answered: a Kafka-protocol port given for the HTTP one is named as such
        fail((args is not None and listener_probe.explain_args(args)) or str(exc))
        return EXIT_USAGE
    except (ClientError, KafkaError) as exc:
        fail(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of our output went away (e.g. `minikafka consume | head`).
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return EXIT_BROKEN_PIPE
    except SystemExit as exc:  # --help and --version
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except OSError as exc:
        fail(f"{exc.__class__.__name__}: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
