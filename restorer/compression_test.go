package restorer_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestRestoreCompressionPerTopic: the restored batches of each topic carry
// the codec its source topic's compression.type names (zstd, gzip,
// uncompressed), snappy (DefaultCompression) for a source topic with compression.type=producer,
// and the --compression codec for every topic when one is given; the
// records themselves are restored whatever the codec.
func TestRestoreCompressionPerTopic(t *testing.T) {
	src := testkit.StartKfake(t, 1)
	adm := testkit.Admin(t, src.Addrs())
	topics := map[string]string{"t-zstd": "zstd", "t-gzip": "gzip", "t-plain": "uncompressed", "t-producer": "producer"}
	for name, codec := range topics {
		if _, err := adm.CreateTopic(t.Context(), 1, 1, map[string]*string{"compression.type": &codec}, name); err != nil {
			t.Fatal(err)
		}
	}
	cl := testkit.Client(t, src.Addrs(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var recs []*kgo.Record
	for name := range topics {
		for i := range 50 {
			recs = append(recs, &kgo.Record{Topic: name, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%0100d", i)})
		}
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Run(t.Context(), backup.Options{Source: []kgo.Opt{kgo.SeedBrokers(src.Addrs()...)}, Store: store, Include: []string{"t-*"}}); err != nil {
		t.Fatal(err)
	}
	const none, gzip, snappy, lz4, zstd = 0, 1, 2, 3, 4 // the batch attributes' codec (Kafka's RecordBatch)
	for _, c := range []struct {
		setting restorer.Compression
		want    map[string]uint8
	}{
		{restorer.CompressionSource, map[string]uint8{"t-zstd": zstd, "t-gzip": gzip, "t-plain": none, "t-producer": snappy}},
		{"lz4", map[string]uint8{"t-zstd": lz4, "t-gzip": lz4, "t-plain": lz4, "t-producer": lz4}},
		{"none", map[string]uint8{"t-zstd": none, "t-gzip": none, "t-plain": none, "t-producer": none}},
		{"zstd", map[string]uint8{"t-zstd": zstd, "t-gzip": zstd, "t-plain": zstd, "t-producer": zstd}},
	} {
		t.Run(c.setting, func(t *testing.T) {
			dst := testkit.StartKfake(t, 1)
			// The target topics take the batches as produced.
			dadm := testkit.Admin(t, dst.Addrs())
			for name := range topics {
				producer := "producer"
				if _, err := dadm.CreateTopic(t.Context(), 1, 1, map[string]*string{"compression.type": &producer}, name); err != nil {
					t.Fatal(err)
				}
			}
			_, err := restorer.Run(t.Context(), restorer.Options{Target: []kgo.Opt{kgo.SeedBrokers(dst.Addrs()...)}, Store: store, ReplicationFactor: 1, Compression: c.setting,
				Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range c.want {
				codecs, n := batchCodecs(t, dst.Addrs(), name)
				if n != 50 {
					t.Errorf("%s: %d records restored, want 50", name, n)
				}
				if len(codecs) != 1 || codecs[0] != want {
					t.Errorf("%s (source compression.type=%s): restored batches' codecs %v, want [%d]", name, topics[name], codecs, want)
				}
			}
		})
	}
}

// batchCodecs reads partition 0 of topic on addrs and returns the distinct
// codecs of its record batches and the number of records.
func batchCodecs(t *testing.T, addrs []string, topic string) ([]uint8, int) {
	t.Helper()
	cl := testkit.Client(t, addrs, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	seen := map[uint8]bool{}
	var codecs []uint8
	n := 0
	for n < 50 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			n++
			if c := r.Attrs.CompressionType(); !seen[c] {
				seen[c] = true
				codecs = append(codecs, c)
			}
		})
	}
	return codecs, n
}
