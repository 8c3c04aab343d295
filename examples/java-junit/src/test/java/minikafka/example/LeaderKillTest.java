package minikafka.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A Java producer and consumer through a kill of the partition's leader: the cluster is
 * started by `minikafka fault serve`, the leader is killed through its HTTP endpoint. */
class LeaderKillTest {
    static Process cluster;
    static String control;
    static String bootstrap;
    static final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void startCluster() throws Exception {
        String minikafka = System.getProperty("minikafka", "minikafka");
        if (minikafka.isEmpty() || minikafka.startsWith("$")) {
            minikafka = "minikafka";
        }
        String dir = Files.createTempDirectory("minikafka-junit").resolve("cluster").toString();
        cluster = new ProcessBuilder(minikafka, "fault", "serve", "--dir", dir, "--json")
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String line = new BufferedReader(new InputStreamReader(cluster.getInputStream())).readLine();
        control = field(line, "control");
        bootstrap = field(line, "kafka_bootstrap");
    }

    @AfterAll
    static void stopCluster() throws Exception {
        if (cluster != null) {
            cluster.destroy(); // SIGTERM: the server stops the cluster it started
            cluster.waitFor();
        }
    }

    static String field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\": \"([^\"]*)\"").matcher(String.valueOf(json));
        assertTrue(m.find(), "no " + name + " in " + json);
        return m.group(1);
    }

    static String post(String path, String body) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create(control + path))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        HttpResponse<String> resp = http.send(req, HttpResponse.BodyHandlers.ofString());
        assertEquals(200, resp.statusCode(), resp.body());
        return resp.body();
    }

    @Test
    void everyAcknowledgedRecordIsReadOnceThroughALeaderKill() throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic("orders", 1, (short) 3))).all().get();
        }
        props.put("acks", "all");
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        String killed;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < 100; i++) {
                sent.add(producer.send(new ProducerRecord<>("orders", "order-" + i)));
            }
            producer.flush();
            killed = post("/v1/faults/kill", "{\"target\": \"leader:orders:0\"}");
            for (int i = 100; i < 200; i++) {
                sent.add(producer.send(new ProducerRecord<>("orders", "order-" + i)));
            }
            producer.flush();
        }
        String leader = field(killed.replaceAll("\"broker\": (\\d+)", "\"broker\": \"$1\""), "broker");
        String now = post("/v1/wait/leader", "{\"topic\": \"orders\", \"partition\": 0}");
        assertNotEquals(leader, field(now.replaceAll("\"leader\": (\\d+)", "\"leader\": \"$1\""), "leader"));
        Map<Long, String> acknowledged = new HashMap<>();
        for (int i = 0; i < sent.size(); i++) {
            acknowledged.put(sent.get(i).get().offset(), "order-" + i);
        }
        post("/v1/faults/heal", "{}");

        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        Map<Long, String> read = new HashMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            TopicPartition tp = new TopicPartition("orders", 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 60_000;
            while (read.size() < 200 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    assertEquals(null, read.put(r.offset(), r.value()), "offset " + r.offset() + " read twice");
                }
            }
        }
        assertEquals(acknowledged, read, "every acknowledged record at its offset, nothing else");
    }
}
