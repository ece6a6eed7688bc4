package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestTopologyFileNotARegularFileExits2 is a regression test (new-user
// pass): topology_file: /dev/zero (config validate, topics, backup) and
// topics --topology /dev/zero read without limit until the host ran out
// of memory, and --topology FIFO hung and ignored SIGTERM. Every reader
// of a topology text (--topology of topics, backup and init,
// topology_file of config validate and topics) refuses a FIFO, a
// character device, a directory and a file over the 1 MiB limit of the
// files a config names at once, exit 2 naming the flag or key and the
// file. A device is /dev/null here: read, it ends at once, so the test
// cannot hang or exhaust memory whatever the code does.
func TestTopologyFileNotARegularFileExits2(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "app.topology.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.topology.txt")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(myAppTopology); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 20); err != nil { // sparse: 2 MiB, mostly a hole
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "subdir")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	base := strings.Replace(strings.Replace(goodConfig, "kafka:9092", "127.0.0.1:1", 1), "path: /tmp/backups", "path: "+filepath.Join(dir, "repo"), 1)
	for _, tt := range []struct{ name, file, want string }{
		{"a FIFO", fifo, "is a named pipe (FIFO), not a regular file"},
		{"a device", "/dev/null", "is a character device, not a regular file"},
		{"a directory", sub, "is a directory, not a regular file"},
		{"over the limit", big, "1 MiB"},
	} {
		cfgWith := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
		writeFileIn(t, dir, filepath.Base(cfgWith), base+"topology_file: "+tt.file+"\n")
		plain := filepath.Join(dir, "plain.yaml")
		writeFileIn(t, dir, "plain.yaml", base)
		for _, c := range []struct {
			what string
			args []string
		}{
			{"--topology", []string{"topics", "-c", plain, "--topology", tt.file}},
			{"--topology", []string{"backup", "-c", plain, "--topology", tt.file}},
			{"--topology", []string{"init", "--application-id", "order-processor", "--bootstrap-servers", "127.0.0.1:1", "-o", filepath.Join(dir, "out.yaml"), "--topology", tt.file}},
			{"topology_file", []string{"config", "validate", "-c", cfgWith}},
			{"topology_file", []string{"topics", "-c", cfgWith}},
		} {
			t.Run(tt.name+" "+c.args[0]+" "+c.what, func(t *testing.T) {
				code, stdout, stderr := runCLIWithin(t, c.args...)
				if code != exitUsage {
					t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitUsage, stdout, stderr)
				}
				for _, w := range []string{c.what, tt.file, tt.want} {
					if !strings.Contains(stderr, w) {
						t.Errorf("stderr does not say %q:\n%s", w, stderr)
					}
				}
				if strings.Contains(stderr, "goroutine ") {
					t.Errorf("a stack trace:\n%s", stderr)
				}
			})
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out.yaml")); !os.IsNotExist(err) {
		t.Errorf("init wrote its output after a refused --topology (err %v)", err)
	}
}

// TestTopologyParseErrorPrefix is a regression test (new-user pass):
// every topology parse error read `--topology: topology topology file
// "x.txt": ...`; it names the flag and the file once. A UTF-8 byte order
// mark before "Topologies:" is ignored (it was "no Topologies: line").
func TestTopologyParseErrorPrefix(t *testing.T) {
	dir := t.TempDir()
	writeFileIn(t, dir, "bad.txt", "Topologies:\n   Sub-topology: 0\n    Banana: x\n")
	writeFileIn(t, dir, "bom.txt", "\uFEFF"+myAppTopology)
	base := strings.Replace(strings.Replace(goodConfig, "kafka:9092", "127.0.0.1:1", 1), "path: /tmp/backups", "path: "+filepath.Join(dir, "repo"), 1)
	writeFileIn(t, dir, "app.yaml", base)
	writeFileIn(t, dir, "bom.yaml", base+"topology_file: bom.txt\n")
	bad := filepath.Join(dir, "bad.txt")
	for _, args := range [][]string{
		{"topics", "-c", filepath.Join(dir, "app.yaml"), "--topology", bad},
		{"init", "--application-id", "order-processor", "--bootstrap-servers", "127.0.0.1:1", "-o", filepath.Join(dir, "out.yaml"), "--topology", bad},
	} {
		code, _, stderr := runCLIWithin(t, args...)
		if w := `--topology "` + bad + `": topology description line 3: "Banana: x"`; code != exitUsage || !strings.Contains(stderr, w) || strings.Contains(stderr, "topology topology") {
			t.Errorf("%s: exit %d, want 2 and %q:\n%s", args[0], code, w, stderr)
		}
	}
	code, stdout, stderr := runCLIWithin(t, "config", "validate", "-c", filepath.Join(dir, "bom.yaml"))
	if code != 0 {
		t.Errorf("a BOM before Topologies: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

// TestSourceChangelogTopicsContradictingTheTopology is a regression test
// (new-user pass): with --topology, an output listed in
// source_changelog_topics became a "source-topic changelog" of the
// backup. topics and backup refuse it (exit 2) naming the topic, its role
// in the topology and the fix, before reaching the cluster; an input
// listed there is consistent.
func TestSourceChangelogTopicsContradictingTheTopology(t *testing.T) {
	dir := t.TempDir()
	top := filepath.Join(dir, "my-app.topology.txt")
	writeFileIn(t, dir, "my-app.topology.txt", myAppTopology)
	base := "application_id: my-app\nsource:\n  bootstrap_servers: [127.0.0.1:1]\nstorage:\n  backend: filesystem\n  path: " + filepath.Join(dir, "repo") + "\n"
	writeFileIn(t, dir, "out.yaml", base+"source_changelog_topics: [order-counts]\n")
	for _, cmd := range []string{"topics", "backup"} {
		code, _, stderr := runCLIWithin(t, cmd, "-c", filepath.Join(dir, "out.yaml"), "--topology", top)
		for _, w := range []string{`source_changelog_topics`, `"order-counts"`, "output topic of the topology", `remove "order-counts" from source_changelog_topics`} {
			if code != exitUsage || !strings.Contains(stderr, w) {
				t.Errorf("%s: exit %d, want 2 and %q:\n%s", cmd, code, w, stderr)
			}
		}
	}
}

// TestTopicsMissingTopologyInput is a regression test (new-user pass): a
// topology input missing from the cluster was only a warning (a missing
// literal include is exit 2). topics refuses it, exit 2 naming the topic
// and the topology; source.topics.allow_missing: true makes it a warning.
func TestTopicsMissingTopologyInput(t *testing.T) {
	brokers := startCluster(t, map[string]string{"order-counts": "", "my-app-counts-store-changelog": "compact"})
	dir := t.TempDir()
	writeFileIn(t, dir, "my-app.topology.txt", myAppTopology)
	top := filepath.Join(dir, "my-app.topology.txt")
	cfg := func(name, extra string) string {
		writeFileIn(t, dir, name, "application_id: my-app\nsource:\n  bootstrap_servers: ["+strings.Join(brokers, ", ")+"]\n"+extra+"storage:\n  backend: filesystem\n  path: "+filepath.Join(dir, "repo")+"\n")
		return filepath.Join(dir, name)
	}
	code, _, stderr := runCLIWithin(t, "--log-level", "error", "topics", "-c", cfg("app.yaml", ""), "--topology", top)
	for _, w := range []string{`names input topic "orders", which does not exist on the cluster`, "topology file", "source.topics.allow_missing: true"} {
		if code != exitUsage || !strings.Contains(stderr, w) {
			t.Errorf("exit %d, want 2 and %q:\n%s", code, w, stderr)
		}
	}
	code, _, stderr = runCLIWithin(t, "--log-level", "error", "topics", "-c", cfg("allow.yaml", "  topics:\n    allow_missing: true\n"), "--topology", top)
	if w := `the topology's input topic "orders" does not exist on the cluster; skipped`; code != 0 || !strings.Contains(stderr, w) {
		t.Errorf("allow_missing: exit %d, want 0 and %q:\n%s", code, w, stderr)
	}
}

// TestDeadLetterTopicContradictingTheTopology is a regression test
// (new-user pass): a dead_letter_queue_topics entry that the --topology
// file names as an input was silently ignored. topics refuses it (exit 2)
// naming its role, before reaching the cluster.
func TestDeadLetterTopicContradictingTheTopology(t *testing.T) {
	dir := t.TempDir()
	writeFileIn(t, dir, "my-app.topology.txt", myAppTopology)
	writeFileIn(t, dir, "app.yaml", "application_id: my-app\nsource:\n  bootstrap_servers: [127.0.0.1:1]\nstorage:\n  backend: filesystem\n  path: "+filepath.Join(dir, "repo")+"\ndead_letter_queue_topics: [orders]\n")
	code, _, stderr := runCLIWithin(t, "topics", "-c", filepath.Join(dir, "app.yaml"), "--topology", filepath.Join(dir, "my-app.topology.txt"))
	for _, w := range []string{"dead_letter_queue_topics", `"orders"`, "input topic of the topology", `remove "orders" from dead_letter_queue_topics`} {
		if code != exitUsage || !strings.Contains(stderr, w) {
			t.Errorf("exit %d, want 2 and %q:\n%s", code, w, stderr)
		}
	}
}
