package minikafka.example;

import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Step {@code eos-soak}: a Kafka Streams {@code exactly_once_v2} word count kept busy for a while. Its input
 * ({@code --input}, created beforehand) gets {@code --rate} lines a second for {@code --seconds} seconds from an
 * idempotent KafkaProducer (with {@code --pause-ms P}, in bursts: one second of input, then P ms without), while
 * a read_committed consumer follows the output ({@code --output}). Streams purges
 * its repartition topic every {@code --purge-ms} ms (DeleteRecords up to the committed offsets), so the stream
 * threads' transactional producers keep writing to partitions whose log start passes all their batches (every
 * one of them once the application caught up during a pause).
 *
 * <p>Events: {@code running} (the application reached RUNNING), {@code progress} every 10 s (lines sent,
 * words counted so far), then {@code soak}: the expected and the read counts, whether they match, every
 * state transition of the application with its time, and how many times it left RUNNING after the first.
 */
final class StreamsSoak {
    private StreamsSoak() {}

    static void run(App.Options o) throws Exception {
        String input = o.value("input", "soak-in");
        String output = o.value("output", "soak-out");
        int seconds = o.intValue("seconds", 60);
        int rate = Math.max(1, o.intValue("rate", 50));
        long cycleMs = 1000L + Math.max(0, o.intValue("pause-ms", 0));
        String[] vocabulary = {"kafka", "broker", "replica", "leader", "follower", "isr", "offset", "commit",
                "group", "stream", "zookeeper", "controller", "epoch", "watermark", "batch", "purge"};

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(App::words)
                .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as("soak-counts-store"))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        Properties sp = o.props(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap());
        sp.put(StreamsConfig.APPLICATION_ID_CONFIG, o.value("app-id", "eos-soak"));
        sp.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        sp.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, o.value("threads", "2"));
        sp.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, o.value("streams-replication-factor", "3"));
        sp.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, o.value("purge-ms", "30000"));
        sp.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        sp.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("eos-soak-state").toString());
        sp.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG),
                o.value("transaction-timeout-ms", "10000"));

        long started = System.nanoTime();
        List<Map<String, Object>> transitions = new ArrayList<>();
        Map<String, Long> expected = new TreeMap<>();
        Map<String, Long> counts = new TreeMap<>();
        try (KafkaStreams streams = new KafkaStreams(builder.build(), sp)) {
            streams.setStateListener((now, before) -> {
                synchronized (transitions) {
                    transitions.add(Map.of("from", before.name(), "to", now.name(),
                            "ms", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)));
                }
            });
            streams.start();
            // settled: RUNNING for 5 s in a row (a second thread joining rebalances once more at start)
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            long runningSince = -1;
            while (System.nanoTime() < deadline) {
                if (streams.state() != KafkaStreams.State.RUNNING) {
                    runningSince = -1;
                } else if (runningSince < 0) {
                    runningSince = System.nanoTime();
                } else if (System.nanoTime() - runningSince > TimeUnit.SECONDS.toNanos(5)) {
                    break;
                }
                Thread.sleep(50);
            }
            long settledMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            Json.event("running", Map.of("state", streams.state().name(), "ms", settledMs));

            Properties pp = o.props(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap());
            pp.put(ProducerConfig.ACKS_CONFIG, "all");
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            Properties cp = o.props(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap());
            cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName());
            cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            Random rnd = new Random(49);
            int lines = 0;
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp);
                 KafkaConsumer<String, Long> reader = new KafkaConsumer<>(cp)) {
                List<TopicPartition> tps = reader.partitionsFor(output, Duration.ofSeconds(30)).stream()
                        .map(i -> new TopicPartition(output, i.partition())).toList();
                reader.assign(tps);
                long begin = System.nanoTime();
                long end = begin + TimeUnit.SECONDS.toNanos(seconds);
                long nextProgress = begin + TimeUnit.SECONDS.toNanos(10);
                while (System.nanoTime() < end) {
                    long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin);
                    long due = elapsedMs / cycleMs * rate + Math.min(elapsedMs % cycleMs, 1000L) * rate / 1000L;
                    while (lines < due) {
                        StringBuilder line = new StringBuilder();
                        for (int w = 1 + rnd.nextInt(8); w > 0; w--) {
                            line.append(vocabulary[rnd.nextInt(vocabulary.length)]).append(' ');
                        }
                        for (String word : App.words(line.toString())) expected.merge(word, 1L, Long::sum);
                        producer.send(new ProducerRecord<>(input, "line-" + lines, line.toString()));
                        lines++;
                    }
                    read(reader, counts, 20);
                    if (System.nanoTime() > nextProgress) {
                        nextProgress += TimeUnit.SECONDS.toNanos(10);
                        Json.event("progress", Map.of("lines", lines, "state", streams.state().name(),
                                "counted", counts.values().stream().mapToLong(Long::longValue).sum()));
                    }
                }
                producer.flush();
                long wait = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(o.intValue("timeout-ms", 60_000));
                while (!counts.equals(expected) && System.nanoTime() < wait
                        && streams.state() != KafkaStreams.State.ERROR) {
                    read(reader, counts, 200);
                }
            }
            streams.close(Duration.ofSeconds(30));
            int leftRunning = 0;  // after the application settled, and before it was closed
            synchronized (transitions) {
                for (Map<String, Object> t : transitions) {
                    if ((Long) t.get("ms") >= settledMs && t.get("from").equals("RUNNING")
                            && !t.get("to").equals("PENDING_SHUTDOWN")) {
                        leftRunning++;
                    }
                }
                Map<String, Object> result = new HashMap<>();
                result.put("lines", lines);
                result.put("expected", expected);
                result.put("counts", counts);
                result.put("match", counts.equals(expected));
                result.put("transitions", transitions);
                result.put("left_running", leftRunning);
                Json.event("soak", result);
            }
        }
    }

    private static void read(KafkaConsumer<String, Long> reader, Map<String, Long> counts, long ms) {
        for (ConsumerRecord<String, Long> r : reader.poll(Duration.ofMillis(ms))) {
            counts.put(r.key(), r.value());
        }
    }
}
