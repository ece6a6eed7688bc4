package backup_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// writeCountingStore counts the writes (Put, Delete) that reach its backend.
type writeCountingStore struct {
	storage.Backend
	mu     sync.Mutex
	writes []string
}

func (s *writeCountingStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	s.mu.Lock()
	s.writes = append(s.writes, "put "+key)
	s.mu.Unlock()
	return s.Backend.Put(ctx, key, r, size)
}

func (s *writeCountingStore) Delete(ctx context.Context, key string) error {
	s.mu.Lock()
	s.writes = append(s.writes, "delete "+key)
	s.mu.Unlock()
	return s.Backend.Delete(ctx, key)
}

// TestRefusedBackupWritesNothing: a backup refused for its selection (no
// include and no topology, a topology mismatch, nothing selected, a
// missing literal include) writes nothing to the repository, not even its
// lock, and with Options.OpenStore never opens the storage (which for a
// directory creates it); new-user pass, issue 12: a refused backup left an
// empty repository directory behind.
func TestRefusedBackupWritesNothing(t *testing.T) {
	kf := seededKfake(t)
	ctx := context.Background()
	mismatch := sampleTopology("")
	cases := []struct {
		name string
		edit func(*backup.Options)
		want func(error) bool
	}{
		{"no include and no topology", func(o *backup.Options) { o.Include, o.ApplicationID = nil, "no-such-app" },
			func(err error) bool { return errors.Is(err, backup.ErrNoTopicsSelector) }},
		{"topology mismatch", func(o *backup.Options) {
			o.Include, o.SourceChangelogTopics, o.Topology, o.Exclude = nil, nil, mismatch, []string{sample.Orders}
		}, func(err error) bool { var e *topicfilter.TopologyMismatchError; return errors.As(err, &e) }},
		{"nothing selected", func(o *backup.Options) { o.Include = []string{"no-such-*"} },
			func(err error) bool { return errors.Is(err, backup.ErrNothingSelected) }},
		{"missing literal include", func(o *backup.Options) { o.Include = []string{"no-such-topic"} },
			func(err error) bool { var e *topicfilter.MissingTopicsError; return errors.As(err, &e) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, _ := storage.NewFilesystem(t.TempDir())
			st := &writeCountingStore{Backend: fs}
			o := sampleOptions(kf.Addrs(), st)
			c.edit(&o)
			if _, err := backup.Run(ctx, o); !c.want(err) {
				t.Fatalf("Run = %v, want the refusal", err)
			}
			if len(st.writes) > 0 {
				t.Errorf("a refused backup wrote %q", st.writes)
			}
			dir := filepath.Join(t.TempDir(), "repo")
			o.Store = nil
			o.OpenStore = func(context.Context) (storage.Backend, error) { return storage.NewFilesystem(dir) }
			if _, err := backup.Run(ctx, o); !c.want(err) {
				t.Fatalf("Run with OpenStore = %v, want the refusal", err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused backup created the repository directory %s (%v)", dir, err)
			}
		})
	}
	// An accepted selection opens the storage and backs up.
	dir := filepath.Join(t.TempDir(), "repo")
	o := sampleOptions(kf.Addrs(), nil)
	o.OpenStore = func(context.Context) (storage.Backend, error) { return storage.NewFilesystem(dir) }
	if r, err := backup.Run(ctx, o); err != nil || r.Topics == 0 {
		t.Fatalf("Run with OpenStore = %+v, %v", r, err)
	}
}
