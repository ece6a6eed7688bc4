package backup_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestProgressWriteInFlightIsNotAbandoned: when the copy ends, a progress
// manifest write still in flight is finished, not cancelled. S3 may act on
// a PUT whose client has given up: the old code cancelled it, wrote the
// manifest, deleted progress.json, and the abandoned PUT then landed, a
// progress.json left beside the complete manifest (seen as a flaky
// TestCatalog/s3/prune counting one more leftover progress file). The
// proxy holds the second progress write (the first during the copy) for a
// second and then forwards it whatever the client does.
func TestProgressWriteInFlightIsNotAbandoned(t *testing.T) {
	kf := seededKfake(t)
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	proxy := testkit.StartS3Proxy(t, srv.Endpoint)
	const hold = time.Second
	proxy.Fault(testkit.Fault{Method: "PUT", PathContains: "progress.json", Skip: 1, Times: 1,
		Action: testkit.FaultDelayForward, Delay: hold})
	store, err := storage.NewS3(t.Context(), storage.S3Options{Bucket: srv.Bucket, Prefix: "progress-race",
		Endpoint: proxy.Endpoint, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := backup.Run(t.Context(), sampleOptions(kf.Addrs(), store))
	if err != nil {
		t.Fatal(err)
	}
	if len(proxy.Injected()) != 1 {
		t.Fatalf("the proxy held %d progress writes, want 1 (the test no longer exercises the race): %v", len(proxy.Injected()), proxy.Injected())
	}
	// Give a write the backup abandoned the time to land.
	time.Sleep(hold + 500*time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := store.Stat(ctx, format.ManifestKey(res.BackupID)); err != nil {
		t.Fatalf("manifest of %s: %v", res.BackupID, err)
	}
	if _, err := store.Stat(ctx, format.ProgressKey(res.BackupID)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("%s beside the complete manifest: stat err = %v, want ErrNotFound (an abandoned progress write landed after its delete)",
			format.ProgressKey(res.BackupID), err)
	}
}
