"""Kafka's tool spellings (the action as a flag, kafka-configs' entities, the console
producer's properties) become minikafka's commands before parsing."""
from __future__ import annotations

import pytest

from minikafka.cli.client_commands import line_reader
from minikafka.cli.kafka_spellings import translate
from minikafka.cli.main import build_parser, main
from minikafka.errors import ClientError


@pytest.mark.parametrize("kafka, ours", [
    ("topics --create --topic x --partitions 2", "topics create --topic x --partitions 2"),
    ("topics --list --bootstrap-server h:1", "topics list --bootstrap-server h:1"),
    ("topics --bootstrap-server h:1 --describe --topic x", "topics describe --bootstrap-server h:1 --topic x"),
    ("topics --delete --topic x", "topics delete --topic x"),
    ("topics --alter --topic x --partitions 3", "topics alter --topic x --partitions 3"),
    ("groups --list", "groups list"),
    ("groups --describe --group g", "groups describe --group g"),
    ("groups --reset-offsets --group g --topic t --to-earliest", "groups reset-offsets --group g --topic t --to-earliest"),
    ("configs --describe --entity-type topics --entity-name x", "configs describe --topic x"),
    ("configs --describe --entity-type=brokers --entity-name=2", "configs describe --broker 2"),
    ("configs --alter --entity-type topics --entity-name x --add-config a=1", "configs alter --add-config a=1 --topic x"),
    ("configs --alter --entity-type brokers --entity-default --delete-config a", "configs alter --delete-config a --broker-defaults"),
    # ours are left alone
    ("topics describe --topic x", "topics describe --topic x"),
    ("configs describe --topic x", "configs describe --topic x"),
    ("produce t", "produce t"),
])
def test_kafka_spellings_become_subcommands(kafka, ours):
    assert translate(kafka.split()) == ours.split()
    build_parser().parse_args(translate(kafka.split()))  # and they parse


@pytest.mark.parametrize("kafka, words", [
    ("topics --create --list", "give one action: --create and --list"),
    ("configs --describe --entity-type users --entity-name u", "--entity-type users"),
    ("configs --describe --entity-type topics", "needs --entity-name"),
    ("configs --alter --entity-type topics --entity-default", "--entity-default goes with --entity-type brokers"),
])
def test_kafka_spelling_mistakes_are_one_line(kafka, words, capsys):
    assert main(kafka.split()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err, err


def test_console_producer_properties():
    assert line_reader(["parse.key=true", "key.separator=:"]) == (b":", None, False)
    assert line_reader([]) == (None, None, False)
    assert line_reader(["parse.key=true"]) == (b"\t", None, False)  # Kafka's default separator: a tab
    assert line_reader(["key.separator=:"]) == (None, None, False)  # no parse.key: the line is the value
    assert line_reader(["parse.key=true", "key.separator=\\t", "ignore.error=true", "null.marker=N"]) == \
        (b"\t", b"N", True)
    assert line_reader([], key_separator="|", null_marker="-") == (b"|", b"-", False)
    for bad in (["parse.key=yes"], ["print.key=true"], ["parse.key"], ["parse.key=true", "key.separator="]):
        with pytest.raises(ClientError):
            line_reader(bad)
