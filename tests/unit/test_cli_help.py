"""Every command's `--help` explains it: each subcommand has a description, each option and
positional argument a help text, and the bench options give their units; the README's
command table names every command and subcommand."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from minikafka.cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for name, sub in _subcommands(parser).items():
        yield path + (name,), sub
        yield from _walk(sub, path + (name,))


def _arguments(parser: argparse.ArgumentParser):
    return [a for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction))
            and a.help != argparse.SUPPRESS]


def test_every_subcommand_has_a_description():
    missing = [" ".join(path) for path, sub in _walk(build_parser()) if not (sub.description or "").strip()]
    assert missing == [], f"subcommands without a description: {missing}"


def test_every_argument_has_a_help_text():
    missing = [f"{' '.join(path)} {'/'.join(a.option_strings) or a.metavar or a.dest}"
               for path, sub in _walk(build_parser()) for a in _arguments(sub) if not (a.help or "").strip()]
    assert missing == [], f"arguments without help: {missing}"


def test_the_broker_id_of_start_stop_resume_is_documented():
    cluster = _subcommands(build_parser())["cluster"]
    for name in ("start", "stop", "resume", "kill"):
        (positional,) = [a for a in _arguments(_subcommands(cluster)[name]) if not a.option_strings]
        assert positional.metavar == "ID" and "broker" in positional.help, name
        assert "ID" in _subcommands(cluster)[name].format_help().split("positional arguments:")[1]


def test_bench_options_say_their_units():
    bench = _subcommands(build_parser())["bench"]
    units = {("produce", "--value-size"): "BYTES", ("produce", "--batch-size"): "BYTES",
             ("produce", "--linger-ms"): "MS", ("produce", "--records"): "N",
             ("latency", "--rate"): "N", ("latency", "--seconds"): "SECONDS", ("latency", "--value-size"): "BYTES"}
    for (command, option), metavar in units.items():
        (action,) = [a for a in _arguments(_subcommands(bench)[command]) if option in a.option_strings]
        assert action.metavar == metavar, (command, option, action.metavar)
        assert re.search(r"bytes|milliseconds|seconds|per second|number of", action.help), (command, option)


def test_the_readme_command_table_names_every_command():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("## Command line")
    table = text[start:text.index("\n\n", text.index("| command", start))]
    missing = []
    for name, sub in _subcommands(build_parser()).items():
        if not re.search(rf"`(minikafka )?{re.escape(name)}\b", table):
            missing.append(name)
        missing += [f"{name} {s}" for s in _subcommands(sub)
                    if not re.search(rf"`(minikafka )?{re.escape(name)} {re.escape(s)}\b", table)]
    assert missing == [], f"not in the README's command table: {missing}"


def test_the_top_level_help_ends_with_first_steps_that_parse():
    """`minikafka --help` shows a newcomer where to start (cluster up first), and each of its
    example commands is one the parser accepts."""
    text = build_parser().format_help()
    steps = text.split("first steps:")[1]
    commands = [line.strip().split("|")[-1].strip() for line in steps.splitlines() if "minikafka " in line
                and not line.strip().startswith("`")]
    commands = [re.split(r"\s{2,}", c)[0] for c in commands]
    assert commands[0] == "minikafka cluster up"
    assert "minikafka cluster down" in commands
    for command in commands:
        build_parser().parse_args(command.split()[1:])
