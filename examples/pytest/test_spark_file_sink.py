"""A Spark Structured Streaming job (Spark's own format("kafka"), a checkpoint and a JSON
file sink) run before a broker kill, while the broker is down and after it is back: its
output is exactly what the producer was acknowledged, each record once."""
import json

import confluent_kafka
import pytest

import minikafka.spark
from minikafka.testing import Recorder, leader_of

pytestmark = [pytest.mark.process, pytest.mark.minikafka(partitions=2)]


def run_job(spark, kafka, topic, out, checkpoint):
    """One run of the job: what is in the topic now, from where the checkpoint says."""
    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka).option("subscribe", topic)
          .option("startingOffsets", "earliest").load().selectExpr("CAST(value AS STRING) AS value"))
    df.writeStream.format("json").option("path", out).option("checkpointLocation", checkpoint) \
        .trigger(availableNow=True).start().awaitTermination()


def test_the_job_output_is_exact_through_a_broker_kill(minikafka_cluster, minikafka_topic, tmp_path):
    kafka, rec = minikafka_cluster.kafka_bootstrap, Recorder()
    spark = minikafka.spark.local_session("file-sink-example", kafka=True)
    producer = rec.producer(confluent_kafka.Producer({"bootstrap.servers": kafka, "acks": "all",
                                                      "enable.idempotence": True}))
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    for i in range(200):
        producer.produce(minikafka_topic, f"event-{i}".encode())
    producer.flush(60)
    run_job(spark, kafka, minikafka_topic, out, checkpoint)
    with minikafka_cluster.faults.kill(leader_of(minikafka_topic, 0)):
        for i in range(200, 400):
            producer.produce(minikafka_topic, f"event-{i}".encode())
        producer.flush(120)
        run_job(spark, kafka, minikafka_topic, out, checkpoint)  # while the broker is down
    run_job(spark, kafka, minikafka_topic, out, checkpoint)  # back: whatever the last run had not seen yet
    written = [json.loads(line)["value"] for path in (tmp_path / "out").glob("*.json")
               for line in path.read_text().splitlines()]
    acked = [op.value for op in rec.history.acknowledged()]
    assert len(acked) == 400 and sorted(written) == sorted(acked)
