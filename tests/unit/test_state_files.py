"""The state files of `minikafka reference` and `minikafka spark-cluster`
(minikafka.cluster.state_files): written atomically, read back whole, and a missing,
damaged or foreign file is a one-line error of the CLI, never a traceback."""
from __future__ import annotations

import pytest

from minikafka.cli.main import main
from minikafka.reference.cluster import ReferenceBroker, ReferenceState
from minikafka.spark.standalone import SparkClusterState, SparkWorker


def test_the_reference_state_round_trips_and_leaves_no_temporary_file(tmp_path):
    s = ReferenceState(dir=str(tmp_path), version="3.9.1", jars="/jars", zookeeper_port=2181, zookeeper_pid=10,
                       heap="1g")
    s.brokers = {1: ReferenceBroker(1, 9092, pid=11), 2: ReferenceBroker(2, 9093, pid=12)}
    s.save()
    back = ReferenceState.load(tmp_path)
    assert back == s and back.pids() == [10, 11, 12] and back.heap == "1g"  # a restarted broker's heap
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reference.json"]


@pytest.mark.parametrize("command, file", [("reference", "reference.json"), ("spark-cluster", "spark-cluster.json")])
@pytest.mark.parametrize("content, message", [
    ("{not json", "cannot read"),
    ('{"dir": "x"}', "is not a minikafka state file"),
    ('{"brokers": {"one": {}}, "workers": {"one": {}}}', "is not a minikafka state file"),
    ("[]", "is not a minikafka state file"),
])
def test_a_damaged_state_file_is_one_line_and_exit_2(tmp_path, capsys, command, file, content, message):
    (tmp_path / file).write_text(content)
    code = main([command, "status", "--dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("minikafka: error: ") and message in err, err
    assert (tmp_path / file).read_text() == content, "the file is left as it was"


def test_a_reference_heap_that_java_would_refuse_is_one_line_and_exit_2(tmp_path, capsys):
    code = main(["reference", "up", "--heap", "lots", "--dir", str(tmp_path / "kafka")])
    err = capsys.readouterr().err
    assert code == 2 and err == "minikafka: error: --heap must be a size as java -Xmx takes it (256m, 1g), not 'lots'\n"
    assert not (tmp_path / "kafka").exists()


def test_the_spark_state_names_its_folder_when_missing(tmp_path):
    with pytest.raises(Exception, match="no Spark cluster in"):
        SparkClusterState.load(tmp_path)
    s = SparkClusterState(dir=str(tmp_path), spark_home="/spark", master_port=1, master_ui_port=2)
    s.workers = {1: SparkWorker(1, 3, 4)}
    s.save()
    assert SparkClusterState.load(tmp_path) == s
