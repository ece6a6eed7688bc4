package repository

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

func putObject(t *testing.T, store storage.Backend, key, body string) {
	t.Helper()
	if err := store.Put(context.Background(), key, strings.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreReports: reports are saved under their key, listed newest
// first without the journals and locks beside them, and the latest one of
// an application and target cluster is the newest that matches both.
func TestRestoreReports(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const (
		r1 = "20261129T074512.345Z-00000001"
		r2 = "20261129T084512.345Z-00000002"
		r3 = "20261129T094512.345Z-00000003"
	)
	if ids, err := ReportIDs(ctx, store); err != nil || len(ids) != 0 {
		t.Fatalf("empty repository: ids %v, err %v", ids, err)
	}
	if rep, err := LatestReport(ctx, store, "", ""); err != nil || rep != nil {
		t.Fatalf("empty repository: latest %v, err %v", rep, err)
	}
	at := time.Date(2026, 11, 29, 7, 45, 12, 0, time.UTC)
	for _, rep := range []*format.RestoreReport{
		{Plan: format.Plan{BackupID: "b", ApplicationID: "app-a", TargetClusterID: "c1"}, RestoreID: r1, StartedAt: at, Records: 1},
		{Plan: format.Plan{BackupID: "b", ApplicationID: "app-a", TargetClusterID: "c2"}, RestoreID: r2, StartedAt: at, Records: 2},
		{Plan: format.Plan{BackupID: "b", ApplicationID: "app-b", TargetClusterID: "c1"}, RestoreID: r3, StartedAt: at, Records: 3},
	} {
		if err := SaveReport(ctx, store, rep); err != nil {
			t.Fatal(err)
		}
	}
	// Neighbours that are not reports.
	putObject(t, store, format.RestoreJournalKey(r1, "c1"), "{}")
	putObject(t, store, format.RestoreLockKey("c1"), "{}")
	putObject(t, store, "restores/"+r1+"/notes.txt", "x")

	ids, err := ReportIDs(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{r3, r2, r1}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	rep, err := LoadReport(ctx, store, r2)
	if err != nil {
		t.Fatal(err)
	}
	if rep.RestoreID != r2 || rep.TargetClusterID != "c2" || rep.Records != 2 || !rep.StartedAt.Equal(at) {
		t.Fatalf("loaded %+v", rep)
	}
	for _, tc := range []struct {
		app, cluster, want string
	}{
		{"", "", r3},
		{"app-a", "", r2},
		{"app-a", "c1", r1},
		{"", "c1", r3},
		{"app-b", "c2", ""},
	} {
		rep, err := LatestReport(ctx, store, tc.app, tc.cluster)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if rep != nil {
			got = rep.RestoreID
		}
		if got != tc.want {
			t.Errorf("LatestReport(%q, %q) = %q, want %q", tc.app, tc.cluster, got, tc.want)
		}
	}

	// A report that does not decode is an error naming its key, never
	// skipped for an older one.
	putObject(t, store, format.RestoreReportKey(r3), `{"restore_id": `)
	_, err = LatestReport(ctx, store, "app-a", "")
	if want := "restore report restores/" + r3 + "/report.json is damaged: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err %v, want it to start with %q", err, want)
	}
	if !errors.Is(err, ErrUnreadableReport) || storage.IsTransient(err) {
		t.Errorf("a report that does not decode: %v, want ErrUnreadableReport", err)
	}
	if _, err := LoadReport(ctx, store, "20261129T104512.345Z-00000004"); !errors.Is(err, storage.ErrNotFound) ||
		!strings.Contains(err.Error(), "read restores/20261129T104512.345Z-00000004/report.json") || errors.Is(err, ErrUnreadableReport) {
		t.Fatalf("missing report: %v", err)
	}
}

// TestRestoreJournals: no journal is nil without error; a saved journal
// loads back equal from its key; one that does not decode names its key.
func TestRestoreJournals(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const b = "20261129T074512.345Z-9f3a01bc"
	if j, err := LoadJournal(ctx, store, b, "c1"); err != nil || j != nil {
		t.Fatalf("no journal: %v, %v", j, err)
	}
	at := time.Date(2026, 11, 29, 7, 45, 12, 0, time.UTC)
	for _, cluster := range []string{"c1", ""} {
		j := &format.RestoreJournal{BackupID: b, TargetClusterID: cluster, Strategy: format.StrategyChangelog,
			Topics: map[string]string{"orders": "0a"}, UpdatedAt: at}
		if err := SaveJournal(ctx, store, j); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Stat(ctx, format.RestoreJournalKey(b, cluster)); err != nil {
			t.Fatalf("journal not at its key: %v", err)
		}
		got, err := LoadJournal(ctx, store, b, cluster)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, j) {
			t.Fatalf("loaded %+v, want %+v", got, j)
		}
	}
	if _, err := store.Stat(ctx, "restores/journals/"+b+"/unknown-cluster.json"); err != nil {
		t.Fatalf("a target without cluster id: %v", err)
	}
	putObject(t, store, format.RestoreJournalKey(b, "c2"), "[")
	_, err = LoadJournal(ctx, store, b, "c2")
	if want := "restore journal restores/journals/" + b + "/c2.json: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err %v, want it to start with %q", err, want)
	}
}

// TestRestoreJournalAndLockKeys: the listings prune deletes and locks by
// name every journal with its backup id, and every restore lock, and
// nothing else under restores/.
func TestRestoreJournalAndLockKeys(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const (
		b1 = "20261129T074512.345Z-00000001"
		b2 = "20261129T084512.345Z-00000002"
	)
	if j, err := JournalKeys(ctx, store); err != nil || j != nil {
		t.Fatalf("empty: %v, %v", j, err)
	}
	if l, err := RestoreLockKeys(ctx, store); err != nil || l != nil {
		t.Fatalf("empty: %v, %v", l, err)
	}
	for _, key := range []string{
		format.RestoreJournalKey(b1, "c1"), format.RestoreJournalKey(b2, "c1"), format.RestoreJournalKey(b2, ""),
		"restores/journals/stray/c1.json",
		format.RestoreLockKey("c1"), format.RestoreLockKey(""),
		format.RestoreReportKey(b2),
	} {
		putObject(t, store, key, "{}")
	}
	journals, err := JournalKeys(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	want := []JournalKey{
		{Key: "restores/journals/" + b1 + "/c1.json", BackupID: b1},
		{Key: "restores/journals/" + b2 + "/c1.json", BackupID: b2},
		{Key: "restores/journals/" + b2 + "/unknown-cluster.json", BackupID: b2},
		{Key: "restores/journals/stray/c1.json"},
	}
	if !reflect.DeepEqual(journals, want) {
		t.Fatalf("journals %+v, want %+v", journals, want)
	}
	locks, err := RestoreLockKeys(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"restores/locks/c1", "restores/locks/unknown-cluster"}; !reflect.DeepEqual(locks, want) {
		t.Fatalf("locks %v, want %v", locks, want)
	}
}

// TestDamagedReportSaysDamaged is a regression test (third new-user pass):
// a restore report damaged on disk (a newline inside a string, cut short)
// failed with encoding/json's text alone, "invalid character '\n' in
// string literal", naming neither that the object is damaged nor what
// still works. The error names the object, says it is damaged, and that
// the backups are not affected; the decoder's text follows in parentheses.
func TestDamagedReportSaysDamaged(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const id = "20261129T104512.345Z-00000001"
	key := format.RestoreReportKey(id)
	for _, tc := range []struct{ name, body, want string }{
		{"newline in a string", "{\"restore_id\": \"2026\n\"}", "not valid JSON at byte"},
		{"cut short", `{"restore_id": "2026`, "ends early"},
		{"wrong type", `{"records": "many"}`, `field "records" holds a string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			putObject(t, store, key, tc.body)
			_, err := LoadReport(ctx, store, id)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, w := range []string{"restore report " + key + " is damaged", tc.want, "the backups are not affected"} {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if strings.HasPrefix(msg, "invalid character") || strings.HasPrefix(msg, "unexpected EOF") {
				t.Errorf("error %q leads with the decoder's text", msg)
			}
			if !errors.Is(err, ErrUnreadableReport) {
				t.Errorf("error %q does not wrap ErrUnreadableReport", msg)
			}
		})
	}
}

// TestReportNotARegularFileIsDamaged: a restore report, restore journal or
// drill report that is a FIFO or a directory (made by hand in the
// repository) is damaged, with an error naming its key, never "no
// restore"; a FIFO never blocks the read.
func TestReportNotARegularFileIsDamaged(t *testing.T) {
	const id = "20261129T074512.345Z-00000001"
	tests := []struct {
		name string
		key  string
		make func(path string) error
	}{
		{"restore report is a FIFO", format.RestoreReportKey(id), func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"restore report is a directory", format.RestoreReportKey(id), func(p string) error { return os.Mkdir(p, 0o700) }},
		{"drill report is a FIFO", format.DrillReportKey(id), func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"drill report is a directory", format.DrillReportKey(id), func(p string) error { return os.Mkdir(p, 0o700) }},
		{"restore journal is a FIFO", format.RestoreJournalKey(id, "c1"), func(p string) error { return syscall.Mkfifo(p, 0o600) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			root := t.TempDir()
			store, err := storage.NewFilesystem(root)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(root, filepath.FromSlash(tt.key))
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := tt.make(p); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				switch {
				case strings.HasPrefix(tt.key, format.RestoreJournalsPrefix()):
					j, err := LoadJournal(ctx, store, id, "c1")
					if err == nil && j == nil {
						err = errors.New("LoadJournal: no journal, no error")
					}
					done <- err
				case strings.HasPrefix(tt.key, format.DrillsPrefix()):
					ids, err := DrillReportIDs(ctx, store)
					if err == nil && len(ids) == 0 {
						err = errors.New("no drill report listed, no error")
					}
					if err == nil {
						_, err = LoadDrillReport(ctx, store, ids[0])
						if err == nil {
							err = errors.New("drill report read, no error")
						}
					}
					done <- err
				default:
					rep, err := LatestReport(ctx, store, "", "")
					if err == nil {
						err = fmt.Errorf("LatestReport = %v, no error", rep)
					}
					if err != nil && !errors.Is(err, ErrUnreadableReport) && !strings.Contains(err.Error(), "no error") {
						err = fmt.Errorf("%w (does not wrap ErrUnreadableReport)", err)
					}
					done <- err
				}
			}()
			select {
			case err := <-done:
				if err == nil || strings.Contains(err.Error(), "no error") || strings.Contains(err.Error(), "does not wrap") {
					t.Fatalf("got %v, want an error naming %s as damaged", err, tt.key)
				}
				if !strings.Contains(err.Error(), tt.key) || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("error %q does not name %s and say it is not a regular file", err, tt.key)
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("reading %s blocked", tt.key)
			}
		})
	}
}

// TestEncryptedJournalThatDoesNotAuthenticateIsAJournalError: an
// encrypted journal whose bytes were changed fails to open
// (storage.ErrCorrupt); LoadJournal returned it as a plain storage error
// ("read restore journal: ..."), without the journal's own fix (remove
// it), as it does for a journal that does not decode.
func TestEncryptedJournalThatDoesNotAuthenticateIsAJournalError(t *testing.T) {
	ctx := context.Background()
	dir, store := encryptedDir(t, nil)
	const b = "20261129T074512.345Z-9f3a01bc"
	j := &format.RestoreJournal{BackupID: b, TargetClusterID: "c1", Strategy: format.StrategyChangelog,
		Topics: map[string]string{"orders": "0a"}, UpdatedAt: time.Date(2026, 11, 29, 7, 45, 12, 0, time.UTC)}
	if err := SaveJournal(ctx, store, j); err != nil {
		t.Fatal(err)
	}
	raw := filepath.Join(dir, filepath.FromSlash(format.RestoreJournalKey(b, "c1")))
	data, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0xff // in the last chunk's tag
	if err := os.WriteFile(raw, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadJournal(ctx, store, b, "c1")
	var je *JournalError
	if !errors.As(err, &je) || !strings.HasPrefix(err.Error(), "restore journal restores/journals/"+b+"/c1.json: ") {
		t.Fatalf("err %v (%T), want a *JournalError naming the journal", err, err)
	}
}

// TestSaveReportNeverOverwrites is a regression test (issue 15): a second
// restore that reused the first's restore id overwrote its report, and
// the scorecard bound to the first report's SHA-256 no longer verified.
// SaveReport writes a report only where none is: the same bytes again are
// no error, other bytes are ErrReportExists and the first report stays.
func TestSaveReportNeverOverwrites(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const id = "20261202T074512.345Z-00000001"
	at := time.Date(2026, 12, 2, 7, 45, 12, 0, time.UTC)
	first := &format.RestoreReport{Plan: format.Plan{BackupID: "b", ApplicationID: "app-a", TargetClusterID: "c1"}, RestoreID: id, StartedAt: at, Records: 1}
	if err := SaveReport(ctx, store, first); err != nil {
		t.Fatal(err)
	}
	if err := SaveReport(ctx, store, first); err != nil {
		t.Errorf("the same report saved again: %v, want nil", err)
	}
	second := *first
	second.Records = 2
	if err := SaveReport(ctx, store, &second); !errors.Is(err, ErrReportExists) || !strings.Contains(err.Error(), format.RestoreReportKey(id)) {
		t.Errorf("another report under the same restore id: %v, want ErrReportExists naming the key", err)
	}
	if got, err := LoadReport(ctx, store, id); err != nil || got.Records != 1 {
		t.Errorf("the stored report %+v (%v): want the first, kept", got, err)
	}
}

// TestSaveReportIsEncrypted: SaveReport wrote with PutIfAbsent, which the
// encryption wrapper passes through as it is (the locks are written with
// it and stay plaintext), so an encrypted repository held its restore
// reports, topic names and offsets included, in plaintext. The report is
// stored sealed and reads back.
func TestSaveReportIsEncrypted(t *testing.T) {
	ctx := context.Background()
	dir, store := encryptedDir(t, format.IsLockKey)
	rep := &format.RestoreReport{}
	rep.RestoreID, rep.BackupID = "20261129T074612.345Z-0badf00d", "20261129T074512.345Z-9f3a01bc"
	rep.Topics = []format.TopicPlan{{Topic: "orders-of-a-secret-customer"}}
	if err := SaveReport(ctx, store, rep); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(format.RestoreReportKey(rep.RestoreID))))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "orders-of-a-secret-customer") || strings.HasPrefix(string(raw), "{") {
		t.Fatalf("the stored report is plaintext:\n%.200s", raw)
	}
	if got, err := LoadReport(ctx, store, rep.RestoreID); err != nil || len(got.Topics) != 1 || got.Topics[0].Topic != "orders-of-a-secret-customer" {
		t.Fatalf("LoadReport: %+v, %v", got, err)
	}
	if err := SaveReport(ctx, store, rep); err != nil {
		t.Fatalf("the same report again: %v", err)
	}
}

// encryptedDir is a filesystem repository in a temporary directory (dir)
// opened through storage.Encrypt with one key; plaintext as Encrypt's.
func encryptedDir(t *testing.T, plaintext func(string) bool) (dir string, store storage.Backend) {
	t.Helper()
	dir = t.TempDir()
	fs, err := storage.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ring storage.Keyring
	if err := ring.Add([]byte("0123456789abcdef0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	return dir, storage.Encrypt(fs, &ring, plaintext)
}
