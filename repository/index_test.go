package repository_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// Backup ids of the test repositories, oldest first.
const (
	b1 = "20261129T074512.345Z-00000001"
	b2 = "20261129T084512.345Z-00000002"
	b3 = "20261129T094512.345Z-00000003"
	b4 = "20261129T104512.345Z-00000004"
)

func put(t *testing.T, store storage.Backend, key string, body []byte) {
	t.Helper()
	if err := store.Put(context.Background(), key, strings.NewReader(string(body)), int64(len(body))); err != nil {
		t.Fatal(err)
	}
}

// putManifest writes a valid manifest of id (state complete or running) at
// its key.
func putManifest(t *testing.T, store storage.Backend, id, state, app string) {
	t.Helper()
	m := &format.Manifest{Format: format.FormatName, FormatVersion: format.Version, State: state, BackupID: id, ApplicationID: app}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	key := format.ManifestKey(id)
	if state == format.StateRunning {
		key = format.ProgressKey(id)
	}
	put(t, store, key, b)
}

// damage overwrites the manifest at key with one that does not decode.
func damage(t *testing.T, store storage.Backend, key string) {
	t.Helper()
	put(t, store, key, []byte(`{"format": "kafkastreams-dr/backup", "format_version": 1, "st`))
}

func newStore(t *testing.T) storage.Backend {
	t.Helper()
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// TestReadIndex: one listing finds every id with its manifest and progress
// flags, newest first, and leaves out what is not a backup's manifest.
func TestReadIndex(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	putManifest(t, store, b1, format.StateComplete, "app")
	putManifest(t, store, b2, format.StateRunning, "app") // abandoned: b3 completed since
	putManifest(t, store, b3, format.StateComplete, "app")
	putManifest(t, store, b3, format.StateRunning, "app") // a leftover beside the manifest
	putManifest(t, store, b4, format.StateRunning, "app") // running
	put(t, store, "backups/not-an-id/manifest.json", []byte("{}"))
	put(t, store, "backups/"+b1+"/notes.txt", []byte("x"))
	put(t, store, format.SegmentKey(b1, "t", 0, 0), []byte("x"))

	x, err := repository.ReadIndex(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	want := []repository.Backup{
		{ID: b4, HasProgress: true},
		{ID: b3, HasManifest: true, HasProgress: true},
		{ID: b2, HasProgress: true},
		{ID: b1, HasManifest: true},
	}
	if !reflect.DeepEqual(x.Backups, want) {
		t.Fatalf("backups %+v, want %+v", x.Backups, want)
	}
	if got := x.CompleteIDs(); !reflect.DeepEqual(got, []string{b3, b1}) {
		t.Errorf("complete ids %v", got)
	}
	if x.LatestID() != b4 || x.LatestCompleteID() != b3 {
		t.Errorf("latest %s, latest complete %s", x.LatestID(), x.LatestCompleteID())
	}
	for _, b := range want {
		if got, want := x.Abandoned(b), b.ID == b2; got != want {
			t.Errorf("Abandoned(%s) = %v, want %v", b.ID, got, want)
		}
	}
	empty, err := repository.ReadIndex(ctx, newStore(t))
	if err != nil || len(empty.Backups) != 0 || empty.LatestID() != "" || empty.LatestCompleteID() != "" || empty.CompleteIDs() != nil {
		t.Fatalf("empty repository: %+v, %v", empty, err)
	}
}

// TestIndexParentAndResumable is backup's rule: the parent is the newest
// complete backup that reads (damaged ones passed over with a warning
// naming each), and the run to resume is the newest progress-only run
// newer than that parent.
func TestIndexParentAndResumable(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		setup       func(t *testing.T, store storage.Backend)
		parent      string
		warnings    []string // the ids each warning names, in order
		resume      string
		resumeError string
	}{
		{"empty repository", func(*testing.T, storage.Backend) {}, "", nil, "", ""},
		{"the newest complete backup", func(t *testing.T, s storage.Backend) {
			putManifest(t, s, b1, format.StateComplete, "app")
			putManifest(t, s, b2, format.StateComplete, "app")
		}, b2, nil, "", ""},
		{"damaged newest backups are passed over with a warning each", func(t *testing.T, s storage.Backend) {
			putManifest(t, s, b1, format.StateComplete, "app")
			putManifest(t, s, b2, format.StateComplete, "app")
			damage(t, s, format.ManifestKey(b2))
			putManifest(t, s, b3, format.StateComplete, "app")
			damage(t, s, format.ManifestKey(b3))
		}, b1, []string{b3, b2}, "", ""},
		{"every complete backup damaged: no parent", func(t *testing.T, s storage.Backend) {
			putManifest(t, s, b1, format.StateComplete, "app")
			damage(t, s, format.ManifestKey(b1))
		}, "", []string{b1}, "", ""},
		{"an interrupted run newer than the parent is resumed", func(t *testing.T, s storage.Backend) {
			putManifest(t, s, b1, format.StateComplete, "app")
			putManifest(t, s, b2, format.StateRunning, "app")
			putManifest(t, s, b3, format.StateRunning, "app")
		}, b1, nil, b3, ""},
		{"an interrupted run older than the parent is abandoned", func(t *testing.T, s storage.Backend) {
			putManifest(t, s, b1, format.StateRunning, "app")
			putManifest(t, s, b2, format.StateComplete, "app")
		}, b2, nil, "", ""},
		{"newer than the readable parent, older than a damaged backup", func(t *testing.T, s storage.Backend) {
			putManifest(t, s, b1, format.StateComplete, "app")
			putManifest(t, s, b2, format.StateRunning, "app")
			putManifest(t, s, b3, format.StateComplete, "app")
			damage(t, s, format.ManifestKey(b3))
		}, b1, []string{b3}, b2, ""},
		{"no parent: any interrupted run", func(t *testing.T, s storage.Backend) {
			putManifest(t, s, b1, format.StateRunning, "app")
		}, "", nil, b1, ""},
		{"a leftover progress.json beside a manifest is not resumed", func(t *testing.T, s storage.Backend) {
			putManifest(t, s, b1, format.StateComplete, "app")
			putManifest(t, s, b1, format.StateRunning, "app")
		}, b1, nil, "", ""},
		{"an unreadable progress.json names how to start anew", func(t *testing.T, s storage.Backend) {
			putManifest(t, s, b1, format.StateComplete, "app")
			putManifest(t, s, b2, format.StateRunning, "app")
			damage(t, s, format.ProgressKey(b2))
		}, b1, nil, "", "interrupted backup " + b2 + " cannot be resumed: manifest backups/" + b2 + "/progress.json: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newStore(t)
			tc.setup(t, store)
			x, err := repository.ReadIndex(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			id, m, warnings, err := x.Parent(ctx, "app")
			if err != nil {
				t.Fatal(err)
			}
			if id != tc.parent || (m == nil) != (tc.parent == "") || (m != nil && m.BackupID != tc.parent) {
				t.Fatalf("parent %q (%v), want %q", id, m, tc.parent)
			}
			if len(warnings) != len(tc.warnings) {
				t.Fatalf("warnings %q, want one naming each of %v", warnings, tc.warnings)
			}
			for i, w := range warnings {
				if want := "backup " + tc.warnings[i] + " is damaged and cannot be restored (manifest " + format.ManifestKey(tc.warnings[i]) + ": "; !strings.HasPrefix(w, want) ||
					!strings.HasSuffix(w, "): this backup continues from the latest readable one; restore it or an older one by --backup-id, or start a new chain with backup --full") {
					t.Errorf("warning %q, want it to start with %q", w, want)
				}
			}
			rid, rm, err := x.Resumable(ctx, id, "app")
			if tc.resumeError != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.resumeError) || !strings.HasSuffix(err.Error(), "(delete "+format.ProgressKey(b2)+" to start a new backup instead)") {
					t.Fatalf("resume error %v, want it to start with %q", err, tc.resumeError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rid != tc.resume || (rm == nil) != (tc.resume == "") || (rm != nil && (rm.BackupID != tc.resume || rm.State != format.StateRunning)) {
				t.Fatalf("resume %q (%v), want %q", rid, rm, tc.resume)
			}
		})
	}
}

// TestIndexManifest: an explicit id or "latest", with the errors each
// reader shows (restore, estimate, drill, offsets, describe), and
// LatestAsID, verify's "the newest complete backup, readable or not".
func TestIndexManifest(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	loc := store.Location()
	if _, err := repository.Manifest(ctx, store, "latest"); !errors.Is(err, repository.ErrNoBackup) || err.Error() != "no such backup: "+loc+" holds no complete backup" {
		t.Fatalf("empty repository: %v", err)
	}
	if _, err := repository.Manifest(ctx, store, "", repository.LatestAsID()); !errors.Is(err, repository.ErrNoBackup) || err.Error() != "no such backup: "+loc+" holds no complete backup" {
		t.Fatalf("empty repository, LatestAsID: %v", err)
	}
	putManifest(t, store, b1, format.StateRunning, "app")
	if _, err := repository.Manifest(ctx, store, b1); !errors.Is(err, repository.ErrNoBackup) || err.Error() != "backup "+b1+" is not complete: it is running or interrupted (only backups/"+b1+"/progress.json; the next backup resumes it) and cannot be restored; the repository holds no complete backup yet" {
		t.Fatalf("running, nothing complete: %v", err)
	}
	putManifest(t, store, b2, format.StateComplete, "app")
	putManifest(t, store, b3, format.StateComplete, "app")
	putManifest(t, store, b4, format.StateRunning, "app")

	for _, tc := range []struct {
		name, id string
		opts     []repository.ManifestOption
		want     string // the backup loaded, or
		err      string // the whole error message
	}{
		{"latest", "latest", nil, b3, ""},
		{"empty means latest", "", nil, b3, ""},
		{"latest as id", "latest", []repository.ManifestOption{repository.LatestAsID()}, b3, ""},
		{"an older backup by id", b2, nil, b2, ""},
		{"not an id", "yesterday", nil, "", `no such backup: "yesterday" is not a backup id (like 20261129T074512.345Z-9f3a01bc)`},
		{"no such backup", "20261129T114512.345Z-00000005", nil, "", "no such backup: " + loc + " has no backup 20261129T114512.345Z-00000005 (no backups/20261129T114512.345Z-00000005/manifest.json)"},
		{"abandoned", b1, nil, "", "backup " + b1 + " is not complete: it was interrupted and abandoned (only backups/" + b1 + "/progress.json; a newer backup completed since, no backup resumes it) and cannot be restored; the latest complete backup is " + b3 + " (--backup-id " + b3 + ", or latest)"},
		{"running", b4, nil, "", "backup " + b4 + " is not complete: it is running or interrupted (only backups/" + b4 + "/progress.json; the next backup resumes it) and cannot be restored; the latest complete backup is " + b3 + " (--backup-id " + b3 + ", or latest)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := repository.Manifest(ctx, store, tc.id, tc.opts...)
			if tc.err != "" {
				if !errors.Is(err, repository.ErrNoBackup) || err.Error() != tc.err {
					t.Fatalf("err %v, want %q wrapping ErrNoBackup", err, tc.err)
				}
				return
			}
			if err != nil || m.BackupID != tc.want {
				t.Fatalf("loaded %v, %v; want %s", m, err, tc.want)
			}
		})
	}

	// The newest complete manifest damaged: "latest" never falls back to
	// b2; LatestAsID reports it as that backup's damage.
	damage(t, store, format.ManifestKey(b3))
	_, err := repository.Manifest(ctx, store, "latest")
	le, ok := errors.AsType[*repository.LatestError](err)
	if !ok || le.BackupID != b3 || le.Older != b2 || !errors.Is(err, repository.ErrDamaged) {
		t.Fatalf("latest with its manifest damaged: %v", err)
	}
	_, err = repository.Manifest(ctx, store, "latest", repository.LatestAsID())
	if _, isLatest := errors.AsType[*repository.LatestError](err); isLatest || !errors.Is(err, repository.ErrDamaged) ||
		!strings.HasPrefix(err.Error(), "backup "+b3+": manifest backups/"+b3+"/manifest.json: ") {
		t.Fatalf("LatestAsID with the latest manifest damaged: %v", err)
	}
	if _, err := repository.Manifest(ctx, store, b3); err == nil || !strings.HasPrefix(err.Error(), "backup "+b3+": manifest ") {
		t.Fatalf("damaged by id: %v", err)
	}
}

// TestIndexParentTransient: a parent manifest the store fails to deliver
// (HTTP 500 on every attempt, on a real S3 server) fails Parent naming it,
// transient: a chain never restarts from an older backup because of a
// network failure; a listing that fails is ReadIndex's error.
func TestIndexParentTransient(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	proxy := testkit.StartS3Proxy(t, srv.Endpoint)
	store, err := storage.NewS3(t.Context(), storage.S3Options{Bucket: srv.Bucket, Prefix: "apps/a", Region: srv.Region,
		Endpoint: proxy.Endpoint, PathStyle: true, RequestTimeout: 500 * time.Millisecond, RetryTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	putManifest(t, store, b1, format.StateComplete, "app")
	putManifest(t, store, b2, format.StateComplete, "app")
	x, err := repository.ReadIndex(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	proxy.Fault(testkit.Fault{Method: "GET", PathContains: b2 + "/manifest.json", Action: testkit.FaultStatus500})
	id, m, warnings, err := x.Parent(ctx, "app")
	if !storage.IsTransient(err) || m != nil || id != "" || len(warnings) != 0 ||
		!strings.HasPrefix(err.Error(), "the latest backup "+b2+", the parent of this one, cannot be read: read manifest backups/"+b2+"/manifest.json: ") {
		t.Fatalf("parent %q %v, warnings %q, err %v: want a transient error naming %s", id, m, warnings, err, b2)
	}
	proxy.Clear()
	proxy.Fault(testkit.Fault{Method: "GET", Action: testkit.FaultStatus500}) // ReadIndex reads nothing: its only GET is the listing
	if _, err := repository.ReadIndex(ctx, store); !storage.IsTransient(err) || !strings.HasPrefix(err.Error(), "list backups in "+store.Location()+": ") {
		t.Fatalf("listing: %v", err)
	}
}

// TestIndexRefusesAnotherApplication: Parent and Resumable refuse, with an
// *ApplicationError naming the backup and both application.ids, a backup
// of another application.id than the caller's, "" (none) included: one
// repository prefix holds one application's chain (new-user test: a
// backup of otherapp chained onto myapp's).
func TestIndexRefusesAnotherApplication(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		backupApp string // of the complete backup b1
		resumeApp string // of the interrupted run b2; "-" for none
		app       string // the caller's
		parentErr string // "": Parent succeeds
		resumeErr string // "": Resumable succeeds
	}{
		{"the same application", "myapp", "myapp", "myapp", "", ""},
		{"another application's latest backup", "myapp", "-", "otherapp",
			"backup " + b1 + ` is of application.id "myapp", the config says "otherapp": one repository prefix holds the backups of one application`, ""},
		{"a backup without an application.id", "myapp", "-", "",
			"backup " + b1 + ` is of application.id "myapp", the config says "" (none)`, ""},
		{"a repository of backups without one", "", "-", "myapp",
			"backup " + b1 + ` is of application.id "" (none), the config says "myapp"`, ""},
		{"another application's interrupted run", "myapp", "otherapp", "myapp",
			"", "interrupted backup " + b2 + ` is of application.id "otherapp", the config says "myapp"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newStore(t)
			putManifest(t, store, b1, format.StateComplete, tc.backupApp)
			if tc.resumeApp != "-" {
				putManifest(t, store, b2, format.StateRunning, tc.resumeApp)
			}
			x, err := repository.ReadIndex(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, err error, want string) {
				t.Helper()
				var ae *repository.ApplicationError
				if want == "" {
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					return
				}
				if !errors.Is(err, repository.ErrOtherApplication) || !errors.As(err, &ae) || !strings.HasPrefix(err.Error(), want) {
					t.Fatalf("%s: err %v; want an *ApplicationError starting %q", what, err, want)
				}
			}
			id, m, _, err := x.Parent(ctx, tc.app)
			check("parent", err, tc.parentErr)
			if tc.parentErr != "" {
				if id != "" || m != nil {
					t.Fatalf("refused parent returned %q %v", id, m)
				}
				return
			}
			_, _, err = x.Resumable(ctx, id, tc.app)
			check("resume", err, tc.resumeErr)
		})
	}
}
