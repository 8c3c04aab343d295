"""``minikafka spark-cluster``: a Spark standalone master and workers on this machine, from PySpark.

    minikafka spark-cluster up [--workers 2] [--cores 1] [--memory 1g]   # master + workers on free ports
    minikafka spark-cluster status [--json]                              # master URL, pids, registrations
    minikafka spark-cluster down                                         # stop them by pid
"""
from __future__ import annotations

import argparse
import json
import re


def _dir(parser: argparse.ArgumentParser) -> None:
    from ..spark.standalone import DEFAULT_DIR
    parser.add_argument("--dir", default=DEFAULT_DIR, help=f"folder of the Spark cluster (default {DEFAULT_DIR})")


def _memory(text: str) -> str:
    if not re.fullmatch(r"[1-9][0-9]*[mMgG]", text.strip()):
        raise argparse.ArgumentTypeError(f"expected a size such as 512m or 1g, got {text!r}")
    return text.strip().lower()


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def cmd_up(args: argparse.Namespace) -> int:
    from ..spark import standalone

    state = standalone.up(args.dir, workers=args.workers, cores=args.cores, memory=args.memory,
                          timeout_s=args.timeout, progress=lambda m: print(m, flush=True))
    print(f"Spark master: {state.master_url}   web UI: {state.master_ui}")
    print(f"{len(state.workers)} workers registered, {state.cores} core(s) and {state.memory} each; "
          f"logs: {args.dir}/*.log")
    print(f"stop it with: minikafka spark-cluster down --dir {args.dir}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from ..spark import standalone

    st = standalone.status(args.dir)
    if args.json:
        print(json.dumps(st, indent=2))
        return 0
    m = st["master"]
    print(f"master    {st['master_url']}  web UI {st['web_ui']}  pid {m['pid']}  {m['state']}")
    for w in st["workers"]:
        reg = "registered" if w["registered"] else "not registered"
        print(f"worker-{w['id']}  127.0.0.1:{w['port']}  pid {w['pid']}  {w['state']}  {reg}  "
              f"{w['cores']} core(s), {w['memory']}")
    for a in st["applications"]:
        print(f"app       {a['id']}  {a['name']}  {a['cores']} core(s)  {a['state']}")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    from ..spark import standalone

    for name, outcome in standalone.down(args.dir).items():
        print(f"{name}: {outcome}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    sc = sub.add_parser("spark-cluster", help="run a Spark standalone master and workers beside the cluster",
                        description="A Spark standalone cluster on this machine, started from the installed "
                                    "PySpark (bin/spark-class): one master and N workers bound to 127.0.0.1 on "
                                    "free ports. Drivers connect with master=spark://127.0.0.1:PORT; executors "
                                    "run this Python with this minikafka importable (docs/spark.md).")
    ssub = sc.add_subparsers(dest="spark_cluster_command", metavar="SUBCOMMAND", required=True,
                             parser_class=type(sc))
    up = ssub.add_parser("up", help="start a master and N workers",
                         description="Start a Spark master and N workers on free ports of 127.0.0.1 (the folder "
                                     "is emptied first) and wait until every worker is registered with the "
                                     "master.")
    _dir(up)
    up.add_argument("--workers", type=_count, default=2, help="number of workers (default 2)")
    up.add_argument("--cores", type=_count, default=1, help="number of cores each worker offers (default 1)")
    up.add_argument("--memory", type=_memory, default="1g",
                    help="memory each worker offers to executors, e.g. 512m (default 1g: one executor of "
                         "Spark's default spark.executor.memory)")
    up.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the workers (default 120)")
    up.set_defaults(func=cmd_up)
    status = ssub.add_parser("status", help="show the master URL, the processes and the applications",
                             description="The master URL and web UI, each process's pid and state (running, "
                                         "stopped, dead), whether the master lists each worker, and the "
                                         "running applications.")
    _dir(status)
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.set_defaults(func=cmd_status)
    down = ssub.add_parser("down", help="stop the workers and the master by pid",
                           description="SIGTERM each worker (it kills its executors; SIGKILL after 20 s), then "
                                       "the master, by the pids recorded in spark-cluster.json. Logs are kept.")
    _dir(down)
    down.set_defaults(func=cmd_down)
