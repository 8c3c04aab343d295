"""Option parsing and offset planning of the minikafka Spark source (pure: no Spark, no cluster)."""
from __future__ import annotations

import logging

import pytest

from minikafka.spark.offsets import (
    DataLossError,
    OffsetRange,
    plan_ranges,
    rate_limit,
    split_ranges,
)
from minikafka.spark.options import (
    BATCH,
    EARLIEST,
    LATEST,
    STREAM,
    OffsetSpec,
    OptionError,
    check_specific_partitions,
    matches,
    offsets_from_json,
    offsets_to_json,
    parse_options,
)

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def opts(mode=None, **extra):
    return parse_options({**BOOT, **extra}, mode)


# ----- valid options and defaults ---------------------------------------------------------
def test_defaults_follow_spark_per_mode():
    batch = opts(BATCH, subscribe="a")
    assert batch.strategy == "subscribe" and batch.topics == ("a",)
    assert batch.starting == OffsetSpec("earliest") and batch.ending == OffsetSpec("latest")
    assert batch.fail_on_data_loss is True and batch.include_headers is False
    assert batch.max_offsets_per_trigger is None and batch.min_partitions is None
    assert opts(STREAM, subscribe="a").starting == OffsetSpec("latest")


def test_keys_are_case_insensitive_and_bootstrap_has_an_alias():
    o = parse_options({"BOOTSTRAP.SERVERS": " h1:1 , h2:2 ", "SubScribe": "a, b ,a", "INCLUDEHEADERS": "True",
                       "failondataloss": "FALSE", "minpartitions": "4", "maxOffsetsPerTrigger": "100"}, STREAM)
    assert o.bootstrap_servers == "h1:1,h2:2"
    assert o.topics == ("a", "b")
    assert o.include_headers is True and o.fail_on_data_loss is False
    assert o.min_partitions == 4 and o.max_offsets_per_trigger == 100


def test_subscribe_pattern_is_a_full_match():
    o = opts(subscribePattern="ev.*")
    assert matches(o, "events") and not matches(o, "my-events")


def test_assign_and_specific_offsets():
    o = opts(BATCH, assign='{"t":[0,1]}', startingOffsets='{"t":{"0":23,"1":-2}}',
             endingOffsets='{"t":{"0":-1,"1":40}}')
    assert o.assignment == (("t", 0), ("t", 1))
    assert o.starting.offsets == {("t", 0): 23, ("t", 1): EARLIEST}
    assert o.ending.offsets == {("t", 0): LATEST, ("t", 1): 40}


def test_offsets_json_round_trip():
    offsets = {("b", 1): 7, ("a", 10): 3, ("a", 2): 0}
    data = offsets_to_json(offsets)
    assert list(data) == ["a", "b"] and list(data["a"]) == ["2", "10"]
    assert offsets_from_json(data) == offsets
    assert offsets_from_json('{"a": {"2": 0}}') == {("a", 2): 0}
    with pytest.raises(ValueError):
        offsets_from_json({"a": {"x": 1}})


# ----- errors name the option -------------------------------------------------------------
@pytest.mark.parametrize("options, mode, words", [
    ({"subscribe": "a"}, None, ["kafka.bootstrap.servers", "must be specified"]),
    ({**BOOT}, None, ["One of the following options must be specified", "subscribePattern"]),
    ({**BOOT, "subscribe": "a", "assign": '{"a":[0]}'}, None, ["Only one of the following", "assign, subscribe"]),
    ({**BOOT, "subscribe": " , "}, None, ["No topics to subscribe to", "'subscribe'"]),
    ({**BOOT, "subscribePattern": " "}, None, ["Pattern to subscribe is empty", "'subscribePattern'"]),
    ({**BOOT, "subscribePattern": "a(("}, None, ["'subscribePattern'", "not a valid regular expression"]),
    ({**BOOT, "assign": "t:0"}, None, ["No topicpartitions to assign", "'assign'"]),
    ({**BOOT, "assign": '{"t":[0,"x"]}'}, None, ["option 'assign'", "Expected e.g.".lower()]),
    ({**BOOT, "subscribe": "a", "startingOffsets": "newest"}, None, ["'startingOffsets'"]),
    ({**BOOT, "subscribe": "a", "startingOffsets": '{"a":{"0":"x"}}'}, None, ["'startingOffsets'", "expected e.g."]),
    ({**BOOT, "subscribe": "a", "startingOffsets": '{"a":{"0":-3}}'}, None, ["'startingOffsets'", "-3"]),
    ({**BOOT, "subscribe": "a", "startingOffsets": "latest"}, BATCH, ["'startingOffsets'", "can't be latest"]),
    ({**BOOT, "subscribe": "a", "startingOffsets": '{"a":{"0":-1}}'}, BATCH, ["a-0 can't be latest"]),
    ({**BOOT, "subscribe": "a", "endingOffsets": "earliest"}, BATCH, ["'endingOffsets'", "can't be earliest"]),
    ({**BOOT, "subscribe": "a", "endingOffsets": '{"a":{"0":-2}}'}, BATCH, ["a-0 can't be earliest"]),
    ({**BOOT, "subscribe": "a", "endingOffsets": "latest"}, STREAM, ["'endingOffsets'", "not valid in streaming"]),
    ({**BOOT, "subscribe": "a", "maxOffsetsPerTrigger": "lots"}, None, ["'maxOffsetsPerTrigger'", "integer"]),
    ({**BOOT, "subscribe": "a", "maxOffsetsPerTrigger": "0"}, None, ["'maxOffsetsPerTrigger'", "positive"]),
    ({**BOOT, "subscribe": "a", "minPartitions": "-1"}, None, ["'minPartitions'", "positive"]),
    ({**BOOT, "subscribe": "a", "failOnDataLoss": "yes"}, None, ["'failOnDataLoss'", "'true' or 'false'"]),
    ({**BOOT, "subscribe": "a", "includeHeaders": "1"}, None, ["'includeHeaders'"]),
    ({**BOOT, "subscribe": "a", "kafkaConsumer.pollTimeoutMs": "soon"}, None, ["'kafkaConsumer.pollTimeoutMs'"]),
    ({"kafka.bootstrap.servers": "localhost", "subscribe": "a"}, None, ["'kafka.bootstrap.servers'", "HOST:PORT"]),
    ({**BOOT, "bootstrap.servers": "other:1", "subscribe": "a"}, None, ["disagree"]),
    ({**BOOT, "subscribe": "a", "startingOfsets": "earliest"}, None, ["unknown option 'startingOfsets'"]),
    ({**BOOT, "subscribe": "a", "kafka.fetch.max.bytes": "1"}, None, ["'kafka.fetch.max.bytes'", "not supported"]),
    ({**BOOT, "subscribe": "a", "maxTriggerDelay": "5"}, BATCH, ["'maxTriggerDelay'", "streaming queries only"]),
    ({**BOOT, "subscribe": "a", "maxTriggerDelay": "soon"}, STREAM, ["'maxTriggerDelay'", "duration"]),
    ({**BOOT, "subscribe": "a", "minOffsetsPerTrigger": "0"}, STREAM, ["'minOffsetsPerTrigger'", "positive"]),
    ({**BOOT, "subscribe": "a", "maxRecordsPerPartition": "x"}, None, ["'maxRecordsPerPartition'"]),
    ({**BOOT, "subscribe": "a", "startingTimestamp": "yesterday"}, None, ["'startingTimestamp'", "milliseconds"]),
    ({**BOOT, "subscribe": "a", "startingOffsetsByTimestamp": '{"a":{"0":"x"}}'}, None,
     ["'startingOffsetsByTimestamp'", "JSON"]),
    ({**BOOT, "subscribe": "a", "endingTimestamp": "1000"}, STREAM, ["'endingTimestamp'", "not valid in streaming"]),
    ({**BOOT, "subscribe": "a", "startingOffsetsByTimestampStrategy": "guess"}, None,
     ["'startingOffsetsByTimestampStrategy'", "'error' or 'latest'"]),
    ({**BOOT, "assign": '{"a":[0,1]}', "startingOffsetsByTimestamp": '{"a":{"0":5}}'}, None,
     ["'startingOffsets'", "all TopicPartitions"]),
    ({**BOOT, "subscribe": "a", "path": "/x"}, None, ["takes no path"]),
])
def test_bad_options_fail_with_a_message_naming_the_option(options, mode, words):
    with pytest.raises(OptionError) as info:
        parse_options(options, mode)
    text = str(info.value)
    for word in words:
        assert word.lower() in text.lower(), text


def test_option_errors_are_value_errors():
    with pytest.raises(ValueError):
        parse_options({"subscribe": "a"})


def test_specific_offsets_must_name_every_assigned_partition():
    with pytest.raises(OptionError, match=r"must specify all TopicPartitions.*Specified: \{t-0\} Assigned: \{t-0, t-1\}"):
        opts(assign='{"t":[0,1]}', startingOffsets='{"t":{"0":1}}')
    spec = opts(subscribe="t", startingOffsets='{"t":{"0":1}}').starting
    check_specific_partitions("startingOffsets", spec, {("t", 0)})
    with pytest.raises(OptionError, match="startingOffsets"):
        check_specific_partitions("startingOffsets", spec, {("t", 0), ("t", 1)})


# ----- maxOffsetsPerTrigger: Spark's proportional rate limit ----------------------------------
def test_rate_limit_spreads_the_limit_in_proportion_to_the_backlog():
    start = {("t", 0): 0, ("t", 1): 100, ("t", 2): 50}
    until = {("t", 0): 300, ("t", 1): 200, ("t", 2): 50}  # backlogs 300, 100, 0
    assert rate_limit(40, start, until) == {("t", 0): 30, ("t", 1): 110, ("t", 2): 50}


def test_rate_limit_never_passes_the_latest_offset_and_keeps_everything_when_small():
    start = {("t", 0): 0, ("t", 1): 0}
    until = {("t", 0): 5, ("t", 1): 7}
    assert rate_limit(1000, start, until) == until
    assert rate_limit(10, until, until) == until  # nothing new


def test_rate_limit_does_not_starve_small_partitions():
    start = {("t", 0): 0, ("t", 1): 0}
    until = {("t", 0): 10_000, ("t", 1): 1}
    # 100 * 1/10001 < 1 is rounded up to 1, as in Spark
    assert rate_limit(100, start, until) == {("t", 0): 99, ("t", 1): 1}


def test_rate_limit_counts_new_partitions_from_their_start():
    start = {("t", 0): 0}
    until = {("t", 0): 100, ("t", 1): 100}
    assert rate_limit(20, start, until, new_start={("t", 1): 0}) == {("t", 0): 10, ("t", 1): 10}


# ----- minPartitions: Spark's offset range calculator ---------------------------------------
def test_one_range_per_partition_without_min_partitions_and_empty_ranges_dropped():
    ranges = [OffsetRange("t", 0, 0, 10), OffsetRange("t", 1, 5, 5), OffsetRange("t", 2, 3, 4)]
    assert split_ranges(ranges, None) == [ranges[0], ranges[2]]
    assert split_ranges(ranges, 2) == [ranges[0], ranges[2]]


def test_min_partitions_splits_large_ranges_in_proportion():
    ranges = [OffsetRange("t", 0, 0, 1000), OffsetRange("t", 1, 0, 10)]
    out = split_ranges(ranges, 5)
    assert len(out) >= 5
    assert OffsetRange("t", 1, 0, 10) in out  # small range stays whole
    big = [r for r in out if r.partition == 0]
    assert big[0].start == 0 and big[-1].end == 1000
    assert all(a.end == b.start for a, b in zip(big, big[1:]))
    assert sum(r.size for r in out) == 1010


# ----- planning a micro-batch and data loss -------------------------------------------------
def test_plan_ranges_reads_new_partitions_from_their_start():
    out = plan_ranges({("t", 0): 5}, {("t", 0): 9, ("t", 1): 3}, {("t", 1): 0}, True)
    assert out == [OffsetRange("t", 0, 5, 9), OffsetRange("t", 1, 0, 3)]


def test_truncated_partition_is_data_loss_worded_like_spark():
    with pytest.raises(DataLossError) as info:
        plan_ranges({("t", 0): 50}, {("t", 0): 20}, {}, True)
    text = str(info.value)
    assert "Partition t-0's offset was changed from 50 to 20, some data may have been missed" in text
    assert '"failOnDataLoss" to "false"' in text


def test_without_fail_on_data_loss_the_range_is_skipped_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="minikafka.spark"):
        out = plan_ranges({("t", 0): 50, ("t", 1): 0}, {("t", 0): 20, ("t", 1): 4}, {}, False)
    assert out == [OffsetRange("t", 1, 0, 4)]
    assert "Partition t-0's offset was changed from 50 to 20" in caplog.text


def test_gone_partitions_are_data_loss():
    with pytest.raises(DataLossError, match=r"\{t-1\} are gone"):
        plan_ranges({("t", 0): 1, ("t", 1): 1}, {("t", 0): 2}, {}, True)


# ----- timestamps, maxRecordsPerPartition, minOffsetsPerTrigger ------------------------------
def test_timestamp_options_take_precedence_as_in_spark():
    opts = parse_options({**BOOT, "subscribe": "a", "startingOffsets": "earliest",
                          "startingOffsetsByTimestamp": '{"a":{"0":5}}', "startingTimestamp": "7"}, BATCH)
    assert (opts.starting.kind, opts.starting.timestamp) == ("timestamp", 7)
    opts = parse_options({**BOOT, "subscribe": "a", "startingOffsets": "earliest",
                          "startingOffsetsByTimestamp": '{"a":{"0":5}}',
                          "endingOffsetsByTimestamp": '{"a":{"0":9}}'}, BATCH)
    assert (opts.starting.kind, opts.starting.offsets) == ("timestamp", {("a", 0): 5})
    assert (opts.ending.kind, opts.ending.offsets) == ("timestamp", {("a", 0): 9})
    assert opts.timestamp_strategy == "error"
    opts = parse_options({**BOOT, "subscribe": "a", "minOffsetsPerTrigger": "100", "maxTriggerDelay": "30s",
                          "startingOffsetsByTimestampStrategy": "LATEST", "maxRecordsPerPartition": "10"}, STREAM)
    assert (opts.min_offsets_per_trigger, opts.max_trigger_delay_ms) == (100, 30_000)
    assert (opts.timestamp_strategy, opts.max_records_per_partition) == ("latest", 10)
    assert parse_options({**BOOT, "subscribe": "a"}, STREAM).max_trigger_delay_ms == 15 * 60 * 1000


def test_max_records_per_partition_cuts_ranges_into_equal_parts():
    ranges = [OffsetRange("t", 0, 0, 25), OffsetRange("t", 1, 100, 104)]
    out = split_ranges(ranges, None, 10)
    assert out == [OffsetRange("t", 0, 0, 8), OffsetRange("t", 0, 8, 16), OffsetRange("t", 0, 16, 25),
                   OffsetRange("t", 1, 100, 104)]
    assert all(r.size <= 10 for r in out)
    both = split_ranges(ranges, 8, 10)  # minPartitions first, then the cap
    assert len(both) >= 8 and all(r.size <= 10 for r in both) and sum(r.size for r in both) == 29


def test_min_offsets_per_trigger_waits_for_enough_records_or_the_max_delay(monkeypatch):
    from minikafka.spark import source
    from minikafka.spark.arrow import spark_schema

    clock = [1000.0]
    monkeypatch.setattr(source.time, "monotonic", lambda: clock[0])
    opts = parse_options({**BOOT, "subscribe": "a", "minOffsetsPerTrigger": "100", "maxTriggerDelay": "10s"}, STREAM)
    reader = source.MiniKafkaStreamReader(opts, spark_schema())
    begin = {("a", 0): 0, ("a", 1): 0}
    assert reader._delays_trigger(begin, {("a", 0): 30, ("a", 1): 30}, {})  # 60 < 100: wait
    clock[0] += 5
    assert reader._delays_trigger(begin, {("a", 0): 30, ("a", 1): 30}, {})  # still within 10 s
    assert not reader._delays_trigger(begin, {("a", 0): 60, ("a", 1): 40}, {})  # 100 available: go
    clock[0] += 6
    assert not reader._delays_trigger(begin, {("a", 0): 1, ("a", 1): 0}, {})  # 11 s since: go anyway
    reader._target = {}  # Trigger.AvailableNow never waits
    clock[0] = 1000.0
    reader._last_batch_at = clock[0]
    assert not reader._delays_trigger(begin, {("a", 0): 1, ("a", 1): 0}, {})


def test_security_options_take_the_java_clients_names():
    got = parse_options({**BOOT, "subscribe": "t", "kafka.security.protocol": "SASL_SSL",
                         "kafka.sasl.mechanism": "PLAIN", "kafka.ssl.truststore.location": "/ca.pem",
                         "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
                                                   'required username="alice" password="secret";'})
    assert got.security == {"security_protocol": "SASL_SSL", "sasl_plain_username": "alice",
                            "sasl_plain_password": "secret", "ssl_cafile": "/ca.pem"}
    assert parse_options({**BOOT, "subscribe": "t"}).security == {}
    with pytest.raises(OptionError, match="PLAIN only"):
        parse_options({**BOOT, "subscribe": "t", "kafka.sasl.mechanism": "SCRAM-SHA-256"})
    with pytest.raises(OptionError, match="needs sasl_plain_username"):
        parse_options({**BOOT, "subscribe": "t", "kafka.security.protocol": "SASL_PLAINTEXT"})
    with pytest.raises(OptionError, match="kafka.security.protocol"):
        parse_options({**BOOT, "subscribe": "t", "kafka.client.id": "x"})


# ----- Spark's own Kafka connector (format("kafka")) ------------------------------------
def test_kafka_connector_matches_the_installed_pyspark(monkeypatch, tmp_path):
    import pyspark

    from minikafka.spark import kafka_package
    from minikafka.spark.kafka_jars import JARS_ENV, session_configs

    assert kafka_package() == f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"
    monkeypatch.delenv(JARS_ENV, raising=False)
    assert session_configs() == {"spark.jars.packages": kafka_package()}
    # a folder of resolved jars (the spark image): spark.jars, no download
    (tmp_path / "b.jar").write_bytes(b"")
    (tmp_path / "a.jar").write_bytes(b"")
    monkeypatch.setenv(JARS_ENV, str(tmp_path))
    assert session_configs() == {"spark.jars": f"{tmp_path / 'a.jar'},{tmp_path / 'b.jar'}"}
    with pytest.raises(FileNotFoundError, match="no jar files"):
        session_configs(tmp_path / "missing")
