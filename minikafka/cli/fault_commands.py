"""``minikafka fault ...``: faults by role on a local cluster, one line per action.

The same requests as the control server's HTTP endpoint (:mod:`minikafka.testing.control`):
when a ``minikafka fault serve`` runs for the cluster folder (its address is in the
folder's ``control.json``), each command is sent to it, so that link faults (the
server's brokers run in cgroups of their own) and healing by fault id work; otherwise
the command acts on the recorded processes itself (kill, pause, stop, restart, expiring
a session by pausing the broker, ZooKeeper outages, heal, waits).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from ..cluster.state import DEFAULT_DIR
from ..errors import ClientError

CONTROL_FILE = "control.json"
ROLE_HELP = ("a broker id, broker:ID, leader:TOPIC:PARTITION, follower:TOPIC:PARTITION[:N], controller, "
             "group:GROUP, txn:TRANSACTIONAL_ID")


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (a share of the packets), got {value}")
    return value


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    """Register ``fault serve|kill|pause|stop|restart|expire-session|cut|slow|zookeeper-outage|heal|find|list|wait``."""
    fault = subparsers.add_parser("fault", help="faults by role: kill the leader of a partition, cut a link...",
                                  description="Faults by role on a local cluster (docs/testing.md). Each command "
                                              "prints one line saying what it did (which broker, which epoch).")
    fsub = fault.add_subparsers(dest="fault_command", metavar="COMMAND", required=True)
    dir_parent = argparse.ArgumentParser(add_help=False)
    dir_parent.add_argument("--dir", default=DEFAULT_DIR, help=f"cluster folder (default {DEFAULT_DIR})")
    dir_parent.add_argument("--json", action="store_true", help="print the answer as one JSON object")
    _add_serve_parser(fsub, dir_parent)
    _add_fault_parsers(fsub, dir_parent)
    _add_inspection_parsers(fsub, dir_parent)


def _add_serve_parser(fsub: argparse._SubParsersAction, dir_parent: argparse.ArgumentParser) -> None:
    serve = fsub.add_parser("serve", parents=[dir_parent], help="serve the fault API over HTTP (and start a cluster)",
                            description="Serve the fault API of the cluster in --dir over HTTP on 127.0.0.1 "
                                        "until SIGTERM or Ctrl-C, for tests in any language. Without a running "
                                        "cluster there it starts one first (ZooKeeper, or an ensemble of "
                                        "--zookeeper-nodes servers, and --brokers brokers on free ports, its "
                                        "brokers in cgroups for link faults when running as root) and stops it "
                                        "on exit.")
    serve.add_argument("--port", type=int, default=0, help="port to serve on (default: a free one)")
    serve.add_argument("--brokers", type=positive_int, default=3, help="brokers of a cluster it starts (default 3)")
    serve.add_argument("--zookeeper-nodes", type=positive_int, default=None, metavar="N",
                       help="ZooKeeper servers of a cluster it starts: 1 (default) runs a standalone server, more "
                            "an ensemble (3 or 5, so that a majority outlives one server's loss), for "
                            "`fault zookeeper-outage --server ID` of one server; a cluster already running in "
                            "--dir must have as many")
    serve.add_argument("--links", choices=("auto", "on", "off"), default="auto",
                       help="start the brokers in cgroups for link faults: auto (when root), on, off")
    serve.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                       help="a broker setting of a cluster it starts (repeatable)")
    serve.set_defaults(func=cmd_serve)


def _add_fault_parsers(fsub: argparse._SubParsersAction, dir_parent: argparse.ArgumentParser) -> None:
    """The faults: on the broker playing a role, on a link, on ZooKeeper."""
    for name, help in (("kill", "SIGKILL the broker playing a role (heal: restart it)"),
                       ("pause", "SIGSTOP the broker playing a role (heal: SIGCONT)"),
                       ("stop", "controlled shutdown (SIGTERM) of the broker playing a role (heal: restart)"),
                       ("restart", "kill the broker playing a role and start it again"),
                       ("expire-session", "make ZooKeeper expire the session of the broker playing a role")):
        p = fsub.add_parser(name, parents=[dir_parent], help=help, description=help[0].upper() + help[1:] + ".")
        p.add_argument("target", metavar="TARGET", help=ROLE_HELP)
        if name == "restart":
            p.add_argument("--graceful", action="store_true", help="stop it with SIGTERM rather than SIGKILL")
        p.set_defaults(func=cmd_fault, kind=name.replace("-", "_"))

    for name, help in (("cut", "cut the link between two brokers, or a broker and ZooKeeper (root only)"),
                       ("slow", "drop a share of the packets between two processes (root only)")):
        p = fsub.add_parser(name, parents=[dir_parent], help=help, description=help[0].upper() + help[1:] + ".")
        p.add_argument("a", metavar="A", help=ROLE_HELP + ", or zookeeper")
        p.add_argument("b", metavar="B", help="the other side, as A")
        p.add_argument("--one-way", action="store_true", help="only what A sends to B")
        if name == "cut":
            p.add_argument("--reject", action="store_true", help="reset connections instead of dropping packets")
        else:
            p.add_argument("--loss", type=_share, default=0.3, help="share of the packets dropped (default 0.3)")
        p.set_defaults(func=cmd_link, kind=name)

    zk = fsub.add_parser("zookeeper-outage", parents=[dir_parent], help="kill ZooKeeper (every server, or some)",
                         description="SIGKILL ZooKeeper: every server, or the ones --server names (heal starts "
                                     "them again).")
    zk.add_argument("--server", type=positive_int, action="append", default=None, metavar="ID",
                    help="a server id (repeatable; default every server)")
    zk.set_defaults(func=cmd_zookeeper)


def _add_inspection_parsers(fsub: argparse._SubParsersAction, dir_parent: argparse.ArgumentParser) -> None:
    """``heal``, ``find``, ``list`` and ``wait``."""
    heal = fsub.add_parser("heal", parents=[dir_parent], help="undo the faults and wait for full ISRs",
                           description="Undo one fault by its id (a control server's), or everything: resume "
                                       "paused brokers, restart dead ones and ZooKeeper, remove link faults, then "
                                       "wait until every partition has a leader and a full ISR.")
    heal.add_argument("id", nargs="?", type=positive_int, help="a fault id (default: every fault)")
    heal.add_argument("--timeout", type=float, default=90.0, help="seconds to wait (default 90)")
    heal.set_defaults(func=cmd_heal)

    find = fsub.add_parser("find", parents=[dir_parent], help="which broker plays a role now",
                           description="Which broker plays a role now, and its epoch.")
    find.add_argument("target", metavar="TARGET", help=ROLE_HELP)
    find.set_defaults(func=cmd_find)

    lst = fsub.add_parser("list", parents=[dir_parent], help="the faults a control server made so far",
                          description="The faults the cluster's control server made, one line each.")
    lst.set_defaults(func=cmd_list)

    wait = fsub.add_parser("wait", parents=[dir_parent], help="wait for a leader, full ISRs, a stable group...",
                           description="Wait until: leader TOPIC [PARTITION] has a leader; isr [TOPIC] has full "
                                       "ISRs (every topic by default); group GROUP is Stable; caught-up GROUP TOPIC "
                                       "(the group committed the end offsets).")
    wait.add_argument("what", choices=("leader", "isr", "group", "caught-up"), help="what to wait for")
    wait.add_argument("names", nargs="*", metavar="NAME", help="the topic (and partition), or the group (and topic)")
    wait.add_argument("--not-broker", type=int, default=None, help="leader: a leader other than this broker")
    wait.add_argument("--members", type=positive_int, default=None, help="group: with this many members")
    wait.add_argument("--timeout", type=float, default=30.0, help="seconds to wait (default 30)")
    wait.set_defaults(func=cmd_wait)


# ---------------------------------------------------------------- requests

def control_url(dir: str) -> str | None:
    """The address of the control server serving the cluster in ``dir``, if one runs."""
    path = Path(dir) / CONTROL_FILE
    try:
        info = json.loads(path.read_text())
        pid, url = int(info["pid"]), str(info["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return url


def request(dir: str, method: str, path: str, body: dict | None = None) -> dict:
    """One request of the control API: to the folder's control server, or carried out here."""
    url = control_url(dir)
    if url is not None:
        data = json.dumps(body or {}).encode() if method == "POST" else None
        req = urllib.request.Request(url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=600) as resp:
                status, answer = resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            status, answer = exc.code, json.loads(exc.read() or b"{}")
        except (urllib.error.URLError, OSError) as exc:
            raise ClientError(f"the control server at {url} does not answer: {getattr(exc, 'reason', exc)}") from None
    else:
        from ..testing.cluster import LocalCluster
        from ..testing.control import Control

        if not (Path(dir) / "cluster.json").exists():
            raise ClientError(f"no cluster in {dir}: start one with `minikafka cluster up` or `minikafka fault serve`")
        cluster = LocalCluster.attach(dir)
        try:
            status, answer = Control(cluster).handle(method, path, body or {})
        finally:
            cluster.stop()
    if status != 200:
        raise ClientError(answer.get("message") or f"status {status}")
    return answer


def _print(args: argparse.Namespace, answer: dict, line: str) -> int:
    print(json.dumps(answer) if args.json else line)
    return 0


def cmd_fault(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"target": args.target}
    if args.kind == "restart":
        body["graceful"] = args.graceful
    answer = request(args.dir, "POST", f"/v1/faults/{args.kind}", body)
    return _print(args, answer, answer["text"])


def cmd_link(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"a": args.a, "b": args.b, "both_ways": not args.one_way}
    if args.kind == "cut":
        body["reject"] = args.reject
    else:
        body["loss"] = args.loss
    answer = request(args.dir, "POST", f"/v1/faults/{args.kind}", body)
    return _print(args, answer, answer["text"])


def cmd_zookeeper(args: argparse.Namespace) -> int:
    answer = request(args.dir, "POST", "/v1/faults/zookeeper_outage", {"servers": args.server})
    return _print(args, answer, answer["text"])


def cmd_heal(args: argparse.Namespace) -> int:
    body = {"id": args.id} if args.id is not None else {"timeout_s": args.timeout}
    answer = request(args.dir, "POST", "/v1/faults/heal", body)
    return _print(args, answer, "; ".join(answer["done"]) or "nothing to heal: every partition has a full ISR")


def cmd_find(args: argparse.Namespace) -> int:
    answer = request(args.dir, "POST", "/v1/find", {"target": args.target})
    return _print(args, answer, answer["text"])


def cmd_list(args: argparse.Namespace) -> int:
    answer = request(args.dir, "GET", "/v1/faults")
    if args.json:
        print(json.dumps(answer))
    else:
        for a in answer["faults"]:
            print(f"{a['id']}: {a['text']}{' (healed)' if a['healed'] else ''}")
    return 0


def cmd_wait(args: argparse.Namespace) -> int:
    names = args.names
    wants = {"leader": (1, 2), "isr": (0, 1), "group": (1, 1), "caught-up": (2, 2)}[args.what]
    if not wants[0] <= len(names) <= wants[1]:
        usage = {"leader": "leader TOPIC [PARTITION]", "isr": "isr [TOPIC]", "group": "group GROUP",
                 "caught-up": "caught-up GROUP TOPIC"}[args.what]
        raise ClientError(f"fault wait {args.what} takes: {usage}")
    body: dict[str, Any] = {"timeout_s": args.timeout}
    if args.what == "leader":
        if len(names) == 2 and not names[1].isdigit():
            raise ClientError(f"partition must be a whole number, got {names[1]!r}")
        body.update(topic=names[0], partition=int(names[1]) if len(names) == 2 else 0, not_broker=args.not_broker)
        a = request(args.dir, "POST", "/v1/wait/leader", body)
        return _print(args, a, f"{names[0]}-{body['partition']}: leader {a['leader']}, leader epoch {a['leader_epoch']}")
    if args.what == "isr":
        body["topic"] = names[0] if names else None
        a = request(args.dir, "POST", "/v1/wait/isr_full", body)
        return _print(args, a, f"every replica of {names[0] if names else 'every topic'} is in its ISR")
    if args.what == "group":
        body.update(group=names[0], members=args.members)
        a = request(args.dir, "POST", "/v1/wait/group_stable", body)
        return _print(args, a, f"group {names[0]}: {a['state']}, generation {a['generation']}, {a['members']} member(s)")
    body.update(group=names[0], topic=names[1])
    a = request(args.dir, "POST", "/v1/wait/caught_up", body)
    return _print(args, a, f"group {names[0]} committed the end offsets of {names[1]}: "
                           + ", ".join(f"{k}={v}" for k, v in sorted(a["committed"].items())))


def cmd_serve(args: argparse.Namespace) -> int:
    from ..cluster import launcher
    from ..cluster.state import load
    from ..testing.cluster import LocalCluster, start_cluster
    from ..testing.control import ControlServer

    dir = args.dir
    if control_url(dir) is not None:
        raise ClientError(f"a control server already serves the cluster in {dir} ({control_url(dir)})")
    configs = {}
    for item in args.config:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ClientError(f"--config takes KEY=VALUE, got {item!r}")
        configs[key] = value
    running = (Path(dir) / "cluster.json").exists() and launcher.status(dir)["running"]
    if running and args.zookeeper_nodes is not None:
        zk = load(dir).zookeeper
        has = 0 if zk.external else len(zk.servers) or 1
        if has != args.zookeeper_nodes:
            what = "an external ZooKeeper" if zk.external else f"{has} ZooKeeper server{'s' if has > 1 else ''}"
            raise ClientError(f"--zookeeper-nodes {args.zookeeper_nodes}: the cluster running in {dir} has {what}; "
                              f"stop it (`minikafka cluster down --dir {dir}`) or leave --zookeeper-nodes out")
    cluster = LocalCluster.attach(dir) if running else start_cluster(dir, brokers=args.brokers, broker_configs=configs,
                                                                     links=args.links,
                                                                     zookeeper_nodes=args.zookeeper_nodes or 1)
    server = None
    try:
        server = ControlServer(cluster, args.port)
        (Path(dir) / CONTROL_FILE).write_text(json.dumps({"url": server.url, "pid": os.getpid()}))
        print(json.dumps({"control": server.url, "dir": dir, "bootstrap": cluster.bootstrap,
                          "kafka_bootstrap": cluster.kafka_bootstrap, "zk_connect": cluster.zk_connect,
                          "link_faults": cluster.links is not None}) if args.json else
              f"faults of cluster {dir} at {server.url} (bootstrap {cluster.bootstrap}, Kafka bootstrap "
              f"{cluster.kafka_bootstrap}); SIGTERM or Ctrl-C stops{' it and the cluster' if not running else ''}",
              flush=True)

        def stop(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt
        signal.signal(signal.SIGTERM, stop)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    finally:
        try:
            (Path(dir) / CONTROL_FILE).unlink()
        except OSError:
            pass
        if server is not None:
            server.httpd.server_close()
        cluster.stop()
    return 0
