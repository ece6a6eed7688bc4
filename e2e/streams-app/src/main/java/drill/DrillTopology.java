package drill;

import java.time.Duration;
import java.time.Instant;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The drill topology. Inputs (string keys and values):
 *
 * <pre>
 *   drill-events      user id -> "category:amount", e.g. "u7" -> "books:3"
 *   drill-categories  category -> label,            e.g. "books" -> "Books"
 * </pre>
 *
 * Outputs (string keys and values), each computable from the inputs alone:
 *
 * <pre>
 *   drill-counts         category -> number of events of that category so far ("42")
 *   drill-window-counts  "category@windowStart" (ISO-8601 UTC, 1-minute tumbling windows on
 *                        record timestamps) -> number of events in that window
 *   drill-labeled        user id -> "label:amount" of the user's latest event, the label looked
 *                        up in drill-categories (a foreign-key join on the category)
 * </pre>
 *
 * The latest value per key of each output topic is the answer. Events whose value is null or has
 * an empty category are not counted. Stores are RocksDB (the default) with changelogs; the stores
 * and the re-keying are named so that the internal topics read well, and the foreign-key join is
 * left unnamed, so that its topics have Kafka's generated names:
 *
 * <pre>
 *   &lt;app&gt;-by-category-repartition                       groupBy(category), shared by both counts
 *   &lt;app&gt;-counts-store-changelog                        compact
 *   &lt;app&gt;-window-counts-store-changelog                 compact,delete
 *   &lt;app&gt;-latest-by-user-store-changelog                compact
 *   &lt;app&gt;-category-labels-store-changelog               compact
 *   &lt;app&gt;-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-&lt;n&gt;-topic
 *   &lt;app&gt;-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-&lt;n&gt;-topic
 *   &lt;app&gt;-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-&lt;n&gt;-changelog
 * </pre>
 */
public final class DrillTopology {
    public static final String EVENTS = "drill-events";
    public static final String CATEGORIES = "drill-categories";
    public static final String COUNTS = "drill-counts";
    public static final String WINDOW_COUNTS = "drill-window-counts";
    public static final String LABELED = "drill-labeled";

    /** Tumbling windows of one minute; late records are accepted for a day. */
    static final TimeWindows WINDOWS = TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofDays(1));

    private DrillTopology() {}

    /**
     * SLOW_DOWNSTREAM_MS is the property that slows the downstream sub-topology (the counts behind
     * the by-category repartition topic): milliseconds the count per category sleeps for every
     * record it reads from the repartition topic, default 0 (no sleep). With it the repartition
     * topic's lag (records committed by the upstream task, not yet counted) is large at any
     * moment, as in a busy application whose downstream task is the bottleneck. It does not
     * change the topology (Topology#describe is the same) nor any output value.
     */
    public static final String SLOW_DOWNSTREAM_MS = "drill.slow.downstream.ms";

    /** Builds the topology; props matter only for topology.optimization and SLOW_DOWNSTREAM_MS. */
    public static Topology build(Properties props) {
        long slowMs = slowDownstreamMs(props);
        Serde<String> str = Serdes.String();
        StreamsBuilder builder = new StreamsBuilder();

        KStream<String, String> events = builder.stream(EVENTS, Consumed.with(str, str));

        // Count per category: re-key by category (a repartition topic), then count in a
        // key-value store and, separately, in a window store.
        KGroupedStream<String, String> byCategory = events
                .filter((user, event) -> category(event) != null)
                .groupBy((user, event) -> category(event), Grouped.with("by-category", str, str));

        // count() with an aggregator that can sleep: the same processor and store as count().
        KTable<String, Long> counts = byCategory.aggregate(
                () -> 0L,
                (category, event, count) -> {
                    sleep(slowMs);
                    return count + 1;
                },
                Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts-store")
                        .withKeySerde(str).withValueSerde(Serdes.Long()));
        counts.toStream()
                .mapValues(count -> Long.toString(count))
                .to(COUNTS, Produced.with(str, str));

        byCategory.windowedBy(WINDOWS)
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("window-counts-store")
                        .withKeySerde(str).withValueSerde(Serdes.Long()))
                .toStream()
                .map((window, count) -> KeyValue.pair(
                        window.key() + "@" + Instant.ofEpochMilli(window.window().start()),
                        Long.toString(count)))
                .to(WINDOW_COUNTS, Produced.with(str, str));

        // Label each user's latest event: a table keyed by user whose value refers to a
        // category, joined by that foreign key with the categories table.
        KTable<String, String> latestByUser = events.toTable(
                Named.as("latest-by-user"),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("latest-by-user-store")
                        .withKeySerde(str).withValueSerde(str));
        KTable<String, String> labels = builder.table(CATEGORIES, Consumed.with(str, str),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("category-labels-store")
                        .withKeySerde(str).withValueSerde(str));
        latestByUser
                .join(labels, DrillTopology::category, (event, label) -> label + ":" + amount(event))
                .toStream()
                .to(LABELED, Produced.with(str, str));

        return builder.build(props);
    }

    /** The value of SLOW_DOWNSTREAM_MS in props: a non-negative number of milliseconds, 0 if unset. */
    static long slowDownstreamMs(Properties props) {
        Object v = props.get(SLOW_DOWNSTREAM_MS);
        if (v == null) {
            return 0;
        }
        long ms;
        try {
            ms = Long.parseLong(v.toString().trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(SLOW_DOWNSTREAM_MS + " wants milliseconds (a whole number >= 0), got " + v);
        }
        if (ms < 0) {
            throw new IllegalArgumentException(SLOW_DOWNSTREAM_MS + " wants milliseconds (a whole number >= 0), got " + v);
        }
        return ms;
    }

    private static void sleep(long ms) {
        if (ms <= 0) {
            return;
        }
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The category of an event "category:amount" (all of it without a colon); null if empty. */
    static String category(String event) {
        if (event == null) {
            return null;
        }
        int colon = event.indexOf(':');
        String category = colon < 0 ? event : event.substring(0, colon);
        return category.isEmpty() ? null : category;
    }

    /** The amount of an event "category:amount" as written, "" if it has none. */
    static String amount(String event) {
        int colon = event.indexOf(':');
        return colon < 0 ? "" : event.substring(colon + 1);
    }
}
