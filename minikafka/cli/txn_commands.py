"""``minikafka transactions``: list and describe transactions, with kafka-transactions'
words and columns."""
from __future__ import annotations

import argparse
import json
import time

from ..errors import KafkaError
from .command_config import client_options
from .common import add_dir_and_bootstrap, resolve_bootstrap
from .group_commands import table

LIST_COLUMNS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_COLUMNS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                    "TopicPartitions")


def transactional_id(text: str) -> str:
    """argparse type for a transactional id: any text but the empty one."""
    if not text:
        raise argparse.ArgumentTypeError("transactional id must not be empty")
    return text


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    """Register ``transactions list|describe``."""
    txn = subparsers.add_parser("transactions", help="list and describe transactions",
                                description="Transactions, as kafka-transactions shows them.")
    tsub = txn.add_subparsers(dest="transactions_command", metavar="COMMAND", required=True)
    lst = tsub.add_parser("list", help="list transactional ids and their state",
                          description="Every transactional id the brokers coordinate: coordinator, producer id, state.")
    lst.add_argument("--json", action="store_true", help="print one JSON list")
    add_dir_and_bootstrap(lst)
    lst.set_defaults(func=cmd_list)
    describe = tsub.add_parser("describe", help="state, producer and partitions of one transactional id",
                               description="Coordinator, producer id and epoch, state, timeout, start time, duration "
                                           "and partitions of the open transaction of a transactional id.")
    describe.add_argument("--transactional-id", dest="transactional_id", required=True, type=transactional_id,
                          help="the producer's transactional.id")
    describe.add_argument("--json", action="store_true", help="print one JSON object")
    add_dir_and_bootstrap(describe)
    describe.set_defaults(func=cmd_describe)


def cmd_list(args: argparse.Namespace) -> int:
    from ..client.sync import Admin

    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        found = admin.list_transactions()
    if args.json:
        print(json.dumps([{"transactional_id": t.transactional_id, "coordinator": t.coordinator,
                           "producer_id": t.producer_id, "state": t.state} for t in found]))
        return 0
    rows = [LIST_COLUMNS] + [(t.transactional_id, str(t.coordinator), str(t.producer_id), t.state) for t in found]
    print("\n".join(table(rows)))
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    from ..client.sync import Admin

    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        try:
            d, = admin.describe_transactions([args.transactional_id])
        except KafkaError as exc:
            print(f"{exc.code.name}: {exc.message}")
            return 1
    start = d.transaction_start_time_ms
    duration = int(time.time() * 1000) - start if start >= 0 else -1
    parts = ",".join(f"{tp.topic}-{tp.partition}" for tp in d.partitions)
    if args.json:
        print(json.dumps({"coordinator": d.coordinator, "transactional_id": d.transactional_id,
                          "producer_id": d.producer_id, "producer_epoch": d.producer_epoch, "state": d.state,
                          "transaction_timeout_ms": d.transaction_timeout_ms, "transaction_start_time_ms": start,
                          "transaction_duration_ms": duration,
                          "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in d.partitions]}))
        return 0
    rows = [DESCRIBE_COLUMNS, (str(d.coordinator), d.transactional_id, str(d.producer_id), str(d.producer_epoch),
                               d.state, str(d.transaction_timeout_ms), "None" if start < 0 else str(start),
                               "None" if duration < 0 else str(duration), parts)]
    print("\n".join(table(rows)))
    return 0
