"""A mistyped flag or subcommand: one line that points to the (sub)command's own --help and
names the closest known spelling."""
from __future__ import annotations

import pytest

from minikafka.cli.main import main


@pytest.mark.parametrize("argv, words", [
    ("topics create x --partitons 3", "unrecognized arguments: --partitons 3; did you mean --partitions? "
                                      "(see `minikafka topics create --help`)"),
    ("cluster status --jsn", "unrecognized arguments: --jsn; did you mean --json? (see `minikafka cluster status --help`)"),
    ("topics describe --zzz", "unrecognized arguments: --zzz (see `minikafka topics describe --help`)"),
    ("topics lst", "invalid choice: 'lst'"),
    ("topics lst", "; did you mean list? (see `minikafka topics --help`)"),
    ("tpoics list", "; did you mean topics? (see `minikafka --help`)"),
    ("groups reset-offsets g --topic t --to-earlist", "--to-earlist is not an option; did you mean --to-earliest? "
                                                      "(see `minikafka groups reset-offsets --help`)"),
    ("cluster up --zookeeper-nodes 0", "--zookeeper-nodes: must be at least 1"),
])
def test_a_typo_points_to_the_subcommand_and_the_closest_flag(argv, words, capsys):
    assert main(argv.split()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("minikafka: error: "), err
    assert words in err, err
