package minikafka.example;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka's own Java client against a minikafka cluster's Kafka listener, in four steps:
 *
 * <ol>
 *   <li>{@code admin}: the AdminClient creates the topics and describes the cluster and them;</li>
 *   <li>{@code produce}: an idempotent KafkaProducer (acks=all) writes N numbered records, paced so that
 *       a broker can be killed while they are in flight; it reports which were acknowledged;</li>
 *   <li>{@code consume}: a group of 3 KafkaConsumers in this JVM reads them all, committing as it goes;</li>
 *   <li>{@code wordcount}: writes the lines of a text file and counts their words with Kafka Streams
 *       ({@code --guarantee at_least_once} by default, or {@code exactly_once_v2}), reading the counts back
 *       from the output topic until they are complete.</li>
 * </ol>
 *
 * {@code all} runs the four in order. {@code transactions} (not part of {@code all}) runs a transactional
 * KafkaProducer: a committed and an aborted transaction, a consume-transform-produce loop that commits its
 * input offsets inside each transaction (aborting every third one and rewinding), a second instance with the
 * same {@code transactional.id} that fences the first, and read_committed and read_uncommitted consumers
 * reading the output back. {@code eos-soak} (not part of {@code all} either, see {@link StreamsSoak}) keeps a
 * Kafka Streams {@code exactly_once_v2} word count caught up with a steady input for a while and reports
 * whether it ever left RUNNING. Every result is one JSON object per line on stdout
 * ({@code {"event": ...}}); Kafka's own logging goes to stderr.
 */
public final class App {
    private App() {}

    public static void main(String[] argv) throws Exception {
        if (argv.length == 0) {
            System.err.println("usage: App admin|produce|consume|wordcount|transactions|eos-soak|all --bootstrap HOST:PORT[,...] [options]");
            System.exit(2);
        }
        Options o = new Options(Arrays.copyOfRange(argv, 1, argv.length));
        switch (argv[0]) {
            case "admin" -> admin(o);
            case "produce" -> produce(o);
            case "consume" -> consume(o);
            case "wordcount" -> wordcount(o);
            case "transactions" -> transactions(o);
            case "eos-soak" -> StreamsSoak.run(o);
            case "all" -> {
                admin(o);
                Set<Integer> acked = produce(o);
                consume(o, acked.size());
                wordcount(o);
            }
            default -> {
                System.err.println("unknown step " + argv[0]);
                System.exit(2);
            }
        }
        Json.event("done", Map.of("step", argv[0]));
    }

    // -- AdminClient --------------------------------------------------------------------------
    static void admin(Options o) throws Exception {
        try (Admin admin = Admin.create(o.props(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap()))) {
            DescribeClusterResult cluster = admin.describeCluster();
            Json.event("cluster", Map.of(
                    "cluster_id", cluster.clusterId().get(),
                    "controller", cluster.controller().get().id(),
                    "brokers", cluster.nodes().get().stream().map(Node::id).sorted().toList()));

            int partitions = o.intValue("partitions", 3);
            short rf = (short) o.intValue("replication-factor", 3);
            List<NewTopic> topics = new ArrayList<>();
            topics.add(new NewTopic(o.topic(), partitions, rf).configs(Map.of("min.insync.replicas", "2")));
            topics.add(new NewTopic(o.value("input", "words-in"), partitions, rf));
            topics.add(new NewTopic(o.value("output", "word-counts"), partitions, rf));
            for (NewTopic t : topics) {
                try {
                    admin.createTopics(List.of(t)).all().get();
                    Json.event("created", Map.of("topic", t.name(), "partitions", t.numPartitions(),
                            "replication_factor", (int) t.replicationFactor()));
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) throw e;
                    Json.event("exists", Map.of("topic", t.name()));
                }
            }
            describe(admin, topics.stream().map(NewTopic::name).toList());
        }
    }

    /** One "topic" event per topic: each partition's leader, replicas and ISR (waits until all have a leader). */
    static void describe(Admin admin, List<String> names) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Map<String, TopicDescription> described;
        while (true) {
            described = admin.describeTopics(names).allTopicNames().get();
            boolean led = described.values().stream().flatMap(d -> d.partitions().stream())
                    .allMatch(p -> p.leader() != null && !p.leader().isEmpty());
            if (led || System.nanoTime() > deadline) break;
            Thread.sleep(200);
        }
        for (String name : names) {
            TopicDescription d = described.get(name);
            List<Map<String, Object>> parts = new ArrayList<>();
            for (TopicPartitionInfo p : d.partitions()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("partition", p.partition());
                m.put("leader", p.leader() == null || p.leader().isEmpty() ? -1 : p.leader().id());
                m.put("replicas", p.replicas().stream().map(Node::id).toList());
                m.put("isr", p.isr().stream().map(Node::id).toList());
                parts.add(m);
            }
            Json.event("topic", Map.of("topic", name, "partitions", parts));
        }
    }

    // -- idempotent KafkaProducer -----------------------------------------------------------------
    /** Send records "0".."N-1" (keys key-i); return the numbers whose send was acknowledged. */
    static Set<Integer> produce(Options o) throws Exception {
        int n = o.intValue("records", 3000);
        int rate = o.intValue("rate", 1000);  // records per second: slow enough to kill a broker mid-way
        Properties p = o.props(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap());
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        Set<Integer> acked = ConcurrentHashMap.newKeySet();
        Map<String, Integer> errors = new ConcurrentHashMap<>();
        AtomicBoolean reported = new AtomicBoolean();
        long start = System.nanoTime();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) {
                final int value = i;
                producer.send(new ProducerRecord<>(o.topic(), "key-" + i, Integer.toString(i)), (md, err) -> {
                    if (err != null) {
                        errors.merge(err.getClass().getSimpleName(), 1, Integer::sum);
                        return;
                    }
                    acked.add(value);
                    if (acked.size() >= n / 3 && reported.compareAndSet(false, true)) {
                        Json.event("produce-progress", Map.of("acked", acked.size(), "sent", value + 1));
                    }
                });
                long due = start + (long) (i + 1) * 1_000_000_000L / rate;
                long wait = due - System.nanoTime();
                if (wait > 0) TimeUnit.NANOSECONDS.sleep(wait);
            }
            producer.flush();
        }
        Json.event("produced", Map.of("sent", n, "acked", acked.size(), "errors", errors,
                "acked_values", new TreeSet<>(acked)));
        return acked;
    }

    // -- a KafkaConsumer group of 3 ---------------------------------------------------------------
    static void consume(Options o) throws Exception {
        consume(o, o.intValue("expect", o.intValue("records", 3000)));
    }

    /** Three consumers of one group read until {@code expect} distinct values were seen and each holds a partition. */
    static void consume(Options o, int expect) throws Exception {
        int members = o.intValue("members", 3);
        long timeoutMs = o.intValue("timeout-ms", 120_000);
        String group = o.value("group", "example-group");
        Map<Integer, List<List<Object>>> records = new ConcurrentHashMap<>();
        Set<String> distinct = ConcurrentHashMap.newKeySet();
        Map<Integer, Set<Integer>> assignment = new ConcurrentHashMap<>();
        AtomicInteger rebalances = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch finished = new CountDownLatch(members);
        List<Throwable> failures = new ArrayList<>();
        for (int m = 0; m < members; m++) {
            final int member = m;
            records.put(member, new ArrayList<>());
            assignment.put(member, new TreeSet<>());
            Thread t = new Thread(() -> {
                Properties p = o.props(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap());
                p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                p.put(ConsumerConfig.CLIENT_ID_CONFIG, group + "-" + member);
                p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
                p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
                p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
                p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
                try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
                    consumer.subscribe(List.of(o.topic()), new ConsumerRebalanceListener() {
                        @Override
                        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                            consumer.commitSync();  // what was read stays read: the next owner starts after it
                            assignment.get(member).removeAll(partitions.stream().map(TopicPartition::partition).toList());
                        }

                        @Override
                        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                            rebalances.incrementAndGet();
                            assignment.get(member).addAll(partitions.stream().map(TopicPartition::partition).toList());
                        }
                    });
                    while (!stop.get()) {
                        ConsumerRecords<String, String> batch = consumer.poll(Duration.ofMillis(200));
                        for (ConsumerRecord<String, String> r : batch) {
                            synchronized (records) {
                                records.get(member).add(List.of(r.partition(), r.offset(), r.value()));
                            }
                            distinct.add(r.value());
                        }
                        if (!batch.isEmpty()) consumer.commitSync();
                    }
                } catch (Throwable e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                } finally {
                    finished.countDown();
                }
            }, "consumer-" + member);
            t.start();
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (System.nanoTime() < deadline) {
            boolean everyoneAssigned = assignment.values().stream().noneMatch(Set::isEmpty);
            if (distinct.size() >= expect && everyoneAssigned) break;
            synchronized (failures) {
                if (failures.size() == members) break;
            }
            Thread.sleep(100);
        }
        Map<Integer, List<Integer>> last = new TreeMap<>();  // before close() revokes everything
        assignment.forEach((m, parts) -> last.put(m, new ArrayList<>(parts)));
        stop.set(true);
        finished.await(60, TimeUnit.SECONDS);
        List<Map<String, Object>> out = new ArrayList<>();
        synchronized (records) {
            for (int m = 0; m < members; m++) {
                Map<String, Object> e = new LinkedHashMap<>();
                e.put("member", m);
                e.put("partitions", last.get(m));
                e.put("records", records.get(m));
                out.add(e);
            }
        }
        Json.event("consumed", Map.of("group", group, "expected", expect, "distinct", distinct.size(),
                "assignments", rebalances.get(), "members", out,
                "failures", failures.stream().map(Throwable::toString).toList()));
    }

    // -- Kafka Streams word count --------------------------------------------------------------------
    static void wordcount(Options o) throws Exception {
        String input = o.value("input", "words-in");
        String output = o.value("output", "word-counts");
        List<String> lines = Files.readAllLines(Path.of(o.value("text", "text.txt")));
        Map<String, Long> expected = new TreeMap<>();
        for (String line : lines) {
            for (String w : words(line)) expected.merge(w, 1L, Long::sum);
        }
        Properties pp = o.props(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap());
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < lines.size(); i++) {
                producer.send(new ProducerRecord<>(input, "line-" + i, lines.get(i))).get();
            }
        }
        Json.event("lines", Map.of("topic", input, "lines", lines.size(), "words", expected.size()));

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(App::words)
                .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as("word-counts-store"))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        Properties sp = o.props(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap());
        sp.put(StreamsConfig.APPLICATION_ID_CONFIG, o.value("app-id", "wordcount"));
        String guarantee = o.value("guarantee", StreamsConfig.AT_LEAST_ONCE);
        sp.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        sp.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, o.value("streams-replication-factor", "2"));
        sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "500");
        sp.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        sp.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("wordcount-state").toString());
        Map<String, Long> counts = new TreeMap<>();
        List<String> states = new ArrayList<>();
        try (KafkaStreams streams = new KafkaStreams(builder.build(), sp)) {
            streams.setStateListener((now, before) -> {
                synchronized (states) {
                    states.add(now.name());
                }
            });
            streams.start();
            Properties cp = o.props(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap());
            cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName());
            cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            if (!guarantee.equals(StreamsConfig.AT_LEAST_ONCE)) {  // exactly-once output is read committed
                cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            }
            try (KafkaConsumer<String, Long> reader = new KafkaConsumer<>(cp)) {
                List<TopicPartition> tps = reader.partitionsFor(output, Duration.ofSeconds(30)).stream()
                        .map(i -> new TopicPartition(output, i.partition())).toList();
                reader.assign(tps);
                long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(o.intValue("timeout-ms", 120_000));
                while (!counts.equals(expected) && System.nanoTime() < deadline
                        && streams.state() != KafkaStreams.State.ERROR) {
                    for (ConsumerRecord<String, Long> r : reader.poll(Duration.ofMillis(200))) {
                        counts.put(r.key(), r.value());
                    }
                }
            }
            streams.close(Duration.ofSeconds(30));
        }
        synchronized (states) {
            Json.event("wordcount", Map.of("input", input, "output", output, "counts", counts,
                    "expected", expected, "states", states, "guarantee", guarantee));
        }
    }

    // -- a transactional KafkaProducer ------------------------------------------------------------
    /**
     * Transactions with Kafka's producer: writes {@code --records} numbered records to {@code --txn-input}
     * (plain), then with {@code transactional.id} {@code --transactional-id}: one committed transaction of
     * {@code c-0..c-9} and one aborted of {@code a-0..a-9} to {@code --txn-output}; a consume-transform-produce
     * loop (group {@code --txn-group}, read_committed) that writes {@code t-<value>} for every input record and
     * commits its input offsets with {@code sendOffsetsToTransaction}, aborting every third transaction and
     * rewinding to the committed offsets; then a second producer with the same id, which fences the first.
     * Reports what read_committed and read_uncommitted consumers read from the output.
     */
    static void transactions(Options o) throws Exception {
        String input = o.value("txn-input", "txn-in");
        String output = o.value("txn-output", "txn-out");
        String group = o.value("txn-group", "txn-group");
        String tid = o.value("transactional-id", "example-txn");
        int n = o.intValue("records", 300);
        int partitions = o.intValue("partitions", 3);
        short rf = (short) o.intValue("replication-factor", 3);
        try (Admin admin = Admin.create(o.props(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap()))) {
            for (String name : List.of(input, output)) {
                try {
                    admin.createTopics(List.of(new NewTopic(name, partitions, rf))).all().get();
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) throw e;
                }
            }
            describe(admin, List.of(input, output));
        }
        Properties plain = o.props(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap());
        plain.put(ProducerConfig.ACKS_CONFIG, "all");
        plain.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        plain.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(plain)) {
            for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(input, "key-" + i, Integer.toString(i)));
            producer.flush();
        }

        Properties tp = o.props(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap());
        tp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tid);
        tp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        tp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        int transactions = 0;
        int aborted = 0;
        String fenced = "none";
        Map<String, Object> offsets = new TreeMap<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(tp)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>(output, "c-" + i, "c-" + i));
            producer.commitTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>(output, "a-" + i, "a-" + i));
            producer.flush();  // in the log, then aborted
            producer.abortTransaction();
            Json.event("txn-basic", Map.of("committed", 10, "aborted", 10));

            Properties cp = o.props(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap());
            cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, IsolationLevel.READ_COMMITTED.toString());
            cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
            cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            Set<String> done = new TreeSet<>();
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
                consumer.subscribe(List.of(input));
                long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(o.intValue("timeout-ms", 120_000));
                while (done.size() < n && System.nanoTime() < deadline) {
                    ConsumerRecords<String, String> batch = consumer.poll(Duration.ofMillis(200));
                    if (batch.isEmpty()) continue;
                    producer.beginTransaction();
                    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                    for (ConsumerRecord<String, String> r : batch) {
                        producer.send(new ProducerRecord<>(output, r.key(), "t-" + r.value()));
                        next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                    transactions++;
                    if (transactions % 3 == 0) {
                        producer.abortTransaction();
                        aborted++;
                        // the aborted offsets were not committed: read those records again
                        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(next.keySet());
                        for (TopicPartition p : next.keySet()) {
                            OffsetAndMetadata c = committed.get(p);
                            if (c == null) consumer.seekToBeginning(List.of(p));
                            else consumer.seek(p, c.offset());
                        }
                        continue;
                    }
                    producer.commitTransaction();
                    for (ConsumerRecord<String, String> r : batch) done.add(r.value());
                }
            }
            try (Admin admin = Admin.create(o.props(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap()))) {
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                        .forEach((p, m) -> offsets.put(Integer.toString(p.partition()), m.offset()));
            }
            // a second instance with the same transactional.id fences this one
            try (KafkaProducer<String, String> second = new KafkaProducer<>(tp)) {
                second.initTransactions();
                try {
                    producer.beginTransaction();
                    producer.send(new ProducerRecord<>(output, "zombie", "zombie")).get();
                    producer.commitTransaction();
                } catch (ProducerFencedException e) {
                    fenced = e.getClass().getSimpleName();
                } catch (ExecutionException e) {
                    fenced = e.getCause().getClass().getSimpleName();
                } catch (org.apache.kafka.common.KafkaException e) {
                    fenced = e.getClass().getSimpleName();
                }
                second.beginTransaction();
                second.send(new ProducerRecord<>(output, "winner", "winner"));
                second.commitTransaction();
            }
        }
        Map<String, Object> inputEnds = new TreeMap<>();
        List<String> committed = readAll(o, output, "read_committed");
        List<String> uncommitted = readAll(o, output, "read_uncommitted");
        try (KafkaConsumer<String, String> c = reader(o, "read_uncommitted")) {
            List<TopicPartition> tps = c.partitionsFor(input).stream()
                    .map(i -> new TopicPartition(input, i.partition())).toList();
            c.endOffsets(tps).forEach((p, off) -> inputEnds.put(Integer.toString(p.partition()), off));
        }
        Json.event("transactions", Map.of("transactions", transactions, "aborted", aborted, "fenced", fenced,
                "read_committed", committed, "read_uncommitted", uncommitted,
                "group_offsets", offsets, "input_end_offsets", inputEnds));
    }

    static KafkaConsumer<String, String> reader(Options o, String isolation) {
        Properties cp = o.props(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap());
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(cp);
    }

    /** Every value of a topic, read from the beginning to its end offsets (the LSO for read_committed). */
    static List<String> readAll(Options o, String topic, String isolation) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> c = reader(o, isolation)) {
            List<TopicPartition> tps = c.partitionsFor(topic).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).toList();
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> ends = c.endOffsets(tps);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (System.nanoTime() < deadline && tps.stream().anyMatch(p -> c.position(p) < ends.get(p))) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) values.add(r.value());
            }
        }
        return values;
    }

    static List<String> words(String line) {
        return Arrays.stream(line.toLowerCase(Locale.ROOT).split("\\W+")).filter(w -> !w.isEmpty())
                .collect(Collectors.toList());
    }

    /** --name value pairs; --config key=value (repeatable) goes into every client's properties. */
    static final class Options {
        private final Map<String, String> values = new HashMap<>();
        private final Properties common = new Properties();

        Options(String[] args) throws IOException {
            for (int i = 0; i + 1 < args.length; i += 2) {
                if (!args[i].startsWith("--")) throw new IllegalArgumentException("expected --name, got " + args[i]);
                String name = args[i].substring(2);
                if (name.equals("config")) {
                    String[] kv = args[i + 1].split("=", 2);
                    common.put(kv[0], kv[1]);
                } else {
                    values.put(name, args[i + 1]);
                }
            }
        }

        String bootstrap() {
            return value("bootstrap", "127.0.0.1:29092");
        }

        String topic() {
            return value("topic", "example-records");
        }

        String value(String name, String otherwise) {
            return values.getOrDefault(name, otherwise);
        }

        int intValue(String name, int otherwise) {
            return values.containsKey(name) ? Integer.parseInt(values.get(name)) : otherwise;
        }

        Properties props(String bootstrapKey, String bootstrap) {
            Properties p = new Properties();
            p.putAll(common);
            p.put(bootstrapKey, bootstrap);
            return p;
        }
    }
}
