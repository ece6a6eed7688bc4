package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestRestorePrecheckModesOfAWritersFault: a segment rewritten with one
// record fewer than its manifest entry says, the entry's size and SHA-256
// set to the new bytes (a writer's fault, not storage damage). The
// default pre-check (--precheck digest) checks bytes and headers, so the
// restore's own read finds it at the segment's trailer: exit 1, naming the
// segment, the hint saying the target holds part of the restore. --precheck
// deep decodes the records before the first write: exit 2, nothing written.
func TestRestorePrecheckModesOfAWritersFault(t *testing.T) {
	repo := embeddedRepository(t)
	key := rewriteWithOneRecordLess(t, repo)
	for _, tt := range []struct {
		name  string
		flags []string
		code  int
		want  []string
	}{
		{"default (digest)", nil, exitError, []string{key, "records, the manifest says", "held part of this restore", "--precheck deep checks every record"}},
		{"--precheck deep", []string{"--precheck", "deep"}, damageExitCode, []string{key, "records, the manifest says", "nothing was written"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--log-level", "error", "restore", "--embedded", "--from", repo}, tt.flags...)
			code, stdout, stderr := runBounded(t, args...)
			t.Logf("exit %d\n%s\n%s", code, stdout, stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q", w)
				}
			}
		})
	}
}

// A dry run given --precheck runs that pre-check and refuses damage as the
// restore would (a new user's `restore --dry-run --precheck deep` of a
// damaged backup exited 0: --precheck was ignored); without it, the plan
// says the segments were not checked.
func TestRestoreDryRunRunsTheGivenPrecheck(t *testing.T) {
	repo := embeddedRepository(t)
	key := rewriteWithOneRecordLess(t, repo)
	for _, tt := range []struct {
		name   string
		flags  []string
		code   int
		stdout string
		stderr []string
	}{
		{"no --precheck", nil, 0, "segments: not checked (add --precheck digest or deep", nil},
		{"--precheck digest", []string{"--precheck", "digest"}, 0, "segments: every one this restore reads passed the pre-check (--precheck digest)", nil},
		{"--precheck deep", []string{"--precheck", "deep"}, damageExitCode, "", []string{key, "records, the manifest says", "nothing was written"}},
		// The JSON plan said nothing about the segments (new-user pass).
		{"--json", []string{"--json"}, 0, `"segments_precheck": "none"`, nil},
		{"--json --precheck digest", []string{"--json", "--precheck", "digest"}, 0, `"segments_precheck": "digest"`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--log-level", "error", "restore", "--embedded", "--from", repo, "--dry-run"}, tt.flags...)
			code, stdout, stderr := runBounded(t, args...)
			t.Logf("exit %d\n%s\n%s", code, stdout, stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			if !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout does not say %q", tt.stdout)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q", w)
				}
			}
		})
	}
}

// rewriteWithOneRecordLess rewrites the first segment of 2 records or more
// of the latest backup in the directory repository repo without its last
// record, sets its manifest entry's size and SHA-256 to the new bytes
// (its record count and offsets as they were), and returns its key.
func rewriteWithOneRecordLess(t *testing.T, repo string) string {
	t.Helper()
	store, err := storage.NewFilesystem(repo)
	if err != nil {
		t.Fatal(err)
	}
	m, err := repository.Latest(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	for ti := range m.Topics {
		for pi := range m.Topics[ti].PartitionCuts {
			p := &m.Topics[ti].PartitionCuts[pi]
			for si := range p.Segments {
				s := &p.Segments[si]
				if s.Records < 2 || (s.Kind != "" && s.Kind != format.KindRecord) {
					continue
				}
				path := filepath.Join(repo, filepath.FromSlash(s.Key))
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var recs []format.Record
				if _, _, _, err := format.ReadSegment(bytes.NewReader(b), func(r *format.Record) error {
					recs = append(recs, *r)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				sw, err := format.NewSegmentWriter(&buf, m.Topics[ti].Name, p.Partition)
				if err != nil {
					t.Fatal(err)
				}
				for i := range recs[:len(recs)-1] {
					if err := sw.Write(&recs[i]); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := sw.Close(); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(buf.Bytes())
				s.SHA256, s.Size = hex.EncodeToString(sum[:]), int64(buf.Len())
				mb, err := m.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(repo, filepath.FromSlash(format.ManifestKey(m.BackupID))), mb, 0o644); err != nil {
					t.Fatal(err)
				}
				return s.Key
			}
		}
	}
	t.Fatal("the embedded backup has no record segment of 2 records or more")
	return ""
}
