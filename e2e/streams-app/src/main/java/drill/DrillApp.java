package drill;

import java.io.PrintStream;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;

/**
 * Runs the drill topology (see {@link DrillTopology}) until SIGTERM, or prints it with --describe.
 *
 * <p>stdout carries one line per state change, "STATE RUNNING (was REBALANCING)", so that a test
 * can wait for RUNNING; Kafka's own logging goes to stderr at WARN. On SIGTERM the shutdown hook
 * closes Kafka Streams cleanly (tasks commit and record their changelog offsets, the member leaves
 * the group) and prints "CLOSED". If a stream thread dies, the app shuts down and exits with
 * status 1.
 */
public final class DrillApp {
    static final String USAGE = String.join("\n",
            "usage: java -jar drill-app.jar [flags]",
            "",
            "  --bootstrap-servers HOST:PORT,...  default $DRILL_BOOTSTRAP_SERVERS, else localhost:9092",
            "  --application-id ID                default $DRILL_APPLICATION_ID, else drill-app",
            "  --state-dir DIR                    default $DRILL_STATE_DIR, else Kafka's (<tmp>/kafka-streams)",
            "  --prop KEY=VALUE                   any Kafka Streams setting (repeatable), over the defaults",
            "  --describe                         print Topology#describe() and exit (no broker needed)",
            "",
            "Settings: processing.guarantee=exactly_once_v2, commit.interval.ms=200,",
            "consumer session.timeout.ms=10000, String serdes; --prop overrides any of them.",
            "--prop drill.slow.downstream.ms=MS makes the count per category (the sub-topology",
            "behind the by-category repartition topic) sleep MS ms per record, default 0.",
            "");

    private DrillApp() {}

    public static void main(String[] args) throws InterruptedException {
        Properties props = defaults();
        boolean describe = false;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            String value = null;
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0 && !arg.startsWith("--prop")) {
                value = arg.substring(eq + 1);
                arg = arg.substring(0, eq);
            } else if (arg.startsWith("--prop=")) {
                value = arg.substring("--prop=".length());
                arg = "--prop";
            }
            switch (arg) {
                case "--describe" -> describe = true;
                case "-h", "--help" -> {
                    System.out.print(USAGE);
                    return;
                }
                case "--bootstrap-servers", "--application-id", "--state-dir", "--prop" -> {
                    if (value == null) {
                        if (++i == args.length) {
                            usageError(arg + " needs a value");
                        }
                        value = args[i];
                    }
                    switch (arg) {
                        case "--bootstrap-servers" -> props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, value);
                        case "--application-id" -> props.put(StreamsConfig.APPLICATION_ID_CONFIG, value);
                        case "--state-dir" -> props.put(StreamsConfig.STATE_DIR_CONFIG, value);
                        default -> {
                            int kv = value.indexOf('=');
                            if (kv <= 0) {
                                usageError("--prop wants KEY=VALUE, got " + value);
                            }
                            props.put(value.substring(0, kv), value.substring(kv + 1));
                        }
                    }
                }
                default -> usageError("unknown argument " + arg);
            }
        }

        Topology topology = null;
        try {
            topology = DrillTopology.build(props);
        } catch (IllegalArgumentException e) {
            usageError(e.getMessage());
        }
        if (describe) {
            System.out.print(topology.describe());
            System.out.flush();
            return;
        }
        run(topology, props);
    }

    static Properties defaults() {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, env("DRILL_APPLICATION_ID", "drill-app"));
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, env("DRILL_BOOTSTRAP_SERVERS", "localhost:9092"));
        String stateDir = env("DRILL_STATE_DIR", null);
        if (stateDir != null) {
            props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        }
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        // A killed instance's partitions move on after 10 s rather than the default 45 s.
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), "10000");
        return props;
    }

    static void run(Topology topology, Properties props) throws InterruptedException {
        PrintStream out = System.out;
        out.printf("STARTING application.id=%s bootstrap.servers=%s state.dir=%s%n",
                props.get(StreamsConfig.APPLICATION_ID_CONFIG),
                props.get(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG),
                props.getOrDefault(StreamsConfig.STATE_DIR_CONFIG, "(default)"));
        out.flush();

        KafkaStreams streams = new KafkaStreams(topology, props);
        CountDownLatch failed = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            out.println("STATE " + now + " (was " + before + ")");
            out.flush();
            if (now == KafkaStreams.State.ERROR) {
                failed.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("drill-app: stream thread failed, shutting down:");
            e.printStackTrace();
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        // SIGTERM (or exit below) runs this: a clean close records the stores' changelog offsets
        // (in the RocksDB stores; a .checkpoint file per task only with upgrade.from <= 4.2)
        // and leaves the consumer group, so that the group is empty at once.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            boolean clean = streams.close(CloseOptions.timeout(Duration.ofSeconds(15))
                    .withGroupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP));
            out.println(clean ? "CLOSED" : "CLOSE TIMED OUT");
            out.flush();
        }, "drill-app-shutdown"));

        streams.start();
        failed.await();
        System.exit(1);
    }

    private static String env(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? fallback : v;
    }

    private static void usageError(String msg) {
        System.err.println("drill-app: " + msg);
        System.err.print(USAGE);
        System.exit(2);
    }
}
