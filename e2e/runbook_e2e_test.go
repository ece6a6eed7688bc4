package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit/restorecheck"
)

// runbookDoc is the document whose commands TestRunbook runs.
const runbookDoc = "../docs/OPERATIONS.md"

// runbookCommand is one command of a runbook block: the shell line as
// written (continuations joined) and the exit status its comment promises.
type runbookCommand struct {
	line string
	exit int
	at   int // line number in the document
}

var (
	runbookTag   = regexp.MustCompile(`^<!--\s*runbook:([a-z-]+)\s*-->\s*$`)
	runbookExit  = regexp.MustCompile(`#.*?\bexit (\d+)\b`)
	runbookVar   = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)
	runbookShell = regexp.MustCompile("[;&|<>`()]|\\$\\(")
)

// runbookBlocks reads the fenced sh blocks that follow a
// <!-- runbook:NAME --> comment, by name, in document order. Lines ending
// in a backslash continue on the next line; blank and comment lines are
// dropped.
func runbookBlocks(t *testing.T) map[string][]runbookCommand {
	t.Helper()
	f, err := os.Open(runbookDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blocks := map[string][]runbookCommand{}
	var (
		tag, pending string
		inBlock      bool
		cont         string
		contAt       int
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case !inBlock && runbookTag.MatchString(line):
			pending = runbookTag.FindStringSubmatch(line)[1]
		case !inBlock && strings.HasPrefix(line, "```"):
			inBlock = true
			tag, pending = pending, ""
			if tag != "" && strings.TrimPrefix(line, "```") != "sh" {
				t.Fatalf("%s:%d: the block after <!-- runbook:%s --> must be a ```sh block", runbookDoc, n, tag)
			}
		case inBlock && strings.HasPrefix(line, "```"):
			inBlock, tag = false, ""
		case inBlock && tag != "":
			if cont == "" {
				contAt = n
			}
			if s, ok := strings.CutSuffix(line, `\`); ok {
				cont += s + " "
				continue
			}
			full := strings.TrimSpace(cont + line)
			cont = ""
			if full == "" || strings.HasPrefix(full, "#") {
				continue
			}
			c := runbookCommand{line: full, exit: -1, at: contAt}
			if m := runbookExit.FindStringSubmatch(full); m != nil {
				c.exit, _ = strconv.Atoi(m[1])
			}
			blocks[tag] = append(blocks[tag], c)
		case !inBlock && strings.TrimSpace(line) != "" && pending != "":
			t.Fatalf("%s:%d: <!-- runbook:%s --> must be followed by a ```sh block", runbookDoc, n, pending)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// runbookEnv parses the runbook:env block: NAME=value lines.
func runbookEnv(t *testing.T, cmds []runbookCommand) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, c := range cmds {
		name, _, ok := strings.Cut(c.line, "=")
		if !ok || !regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`).MatchString(name) {
			t.Fatalf("%s:%d: the runbook:env block holds only NAME=value lines, not %q", runbookDoc, c.at, c.line)
		}
		names[name] = true
	}
	return names
}

// runbookRunner runs runbook commands through bash, as an operator's shell
// would, with the built binary first on PATH and the placeholders set.
type runbookRunner struct {
	t        *testing.T
	bin      string // directory holding kafkastreams-dr
	declared map[string]bool
	dir      string // working directory
}

// run runs the commands in order and fails the test at the first whose
// exit status is not the one its comment states. vars must give a value
// to every placeholder the runbook declares.
func (r *runbookRunner) run(name string, cmds []runbookCommand, vars map[string]string) {
	t := r.t
	t.Helper()
	if len(cmds) == 0 {
		t.Fatalf("%s has no runbook:%s commands", runbookDoc, name)
	}
	for v := range r.declared {
		if _, ok := vars[v]; !ok {
			t.Fatalf("the runbook declares %s, which the test does not set", v)
		}
	}
	env := append(os.Environ(), "PATH="+r.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	for _, c := range cmds {
		if !strings.HasPrefix(c.line, "kafkastreams-dr ") {
			t.Fatalf("%s:%d: a runbook command runs kafkastreams-dr, not %q", runbookDoc, c.at, c.line)
		}
		if c.exit < 0 {
			t.Fatalf("%s:%d: %q: say the expected exit status in its comment (# exit N: ...)", runbookDoc, c.at, c.line)
		}
		code, _, _ := strings.Cut(c.line, "#")
		if runbookShell.MatchString(code) {
			t.Fatalf("%s:%d: %q: one plain command per line (no pipes, redirections or substitutions)", runbookDoc, c.at, c.line)
		}
		for _, m := range runbookVar.FindAllStringSubmatch(code, -1) {
			if !r.declared[m[1]] {
				t.Fatalf("%s:%d: %q uses $%s, which the runbook:env block does not set", runbookDoc, c.at, c.line, m[1])
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-c", code)
		cmd.Env, cmd.Dir = env, r.dir
		out, err := cmd.CombinedOutput()
		cancel()
		got := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			got = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s:%d: run %q: %v", runbookDoc, c.at, code, err)
		}
		if got != c.exit {
			t.Fatalf("runbook:%s %s:%d: %s\nexit %d, the runbook says %d; output:\n%s", name, runbookDoc, c.at, c.line, got, c.exit, out)
		}
		t.Logf("runbook:%s: %s -> exit %d", name, strings.TrimSpace(code), got)
	}
}

// runbookConfig writes a config: the sample application's topics from
// source, the filesystem repository repo, and target when not "".
func runbookConfig(t *testing.T, dir, name, source, repo, target string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "application_id: %s\n", sample.AppID)
	fmt.Fprintf(&b, "source_changelog_topics: %s\n", runbookList(sample.SourceChangelogs))
	fmt.Fprintf(&b, "source:\n  bootstrap_servers: %s\n  topics:\n    include: %s\n", runbookList(strings.Split(source, ",")), runbookList(sample.Include))
	if target != "" {
		fmt.Fprintf(&b, "target:\n  bootstrap_servers: %s\n", runbookList(strings.Split(target, ",")))
	}
	fmt.Fprintf(&b, "storage:\n  backend: filesystem\n  path: %s\n  prefix: %s\n", repo, sample.AppID)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runbookList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// runbookStaleState lays out an instance's state directory as Kafka
// Streams 4.x leaves it (RocksDB files, no .checkpoint: KIP-1035), written
// now, i.e. before the restore that follows.
func runbookStaleState(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, task := range []string{"0_0", "1_1"} {
		p := filepath.Join(dir, sample.AppID, task, "rocksdb", "order-totals-store", "000042.sst")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("sst"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(dir, sample.AppID, "0_0", "rocksdb", "order-totals-store", "000042.sst"), old, old); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runbookGroupOffsets returns the committed offsets of the sample's group
// on the cluster at addrs, "topic/partition" -> offset.
func runbookGroupOffsets(t *testing.T, addrs []string) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := testkit.Admin(t, addrs).FetchOffsets(ctx, sample.AppID)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("fetch the offsets of group %s: %v", sample.AppID, err)
	}
	got := map[string]int64{}
	resp.Each(func(o kadm.OffsetResponse) { got[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] = o.At })
	return got
}

// runbookRecords reads every record of topic on the cluster at addrs.
func runbookRecords(t *testing.T, addrs []string, topic string) []format.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := testkit.Admin(t, addrs).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	m := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { m[o.Partition] = o.Offset })
	recs, err := sample.ReadCommitted(ctx, addrs, topic, m)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// runbookTails reads from the cluster at addrs the in-flight tails a
// changelog restore brings back (docs/DOMAIN.md#in-flight): every
// partition of the sample's repartition and FK-subscription topics, from
// the group's committed offset in committed ("topic/partition" -> offset),
// else the log start, to the log end; keyed "topic/partition". parts are
// the topics' partition counts.
func runbookTails(t *testing.T, addrs []string, committed map[string]int64) (tails map[string][]format.Record, parts map[string]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := testkit.Admin(t, addrs)
	topics := []string{sample.Repartition, sample.FKTopic}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	tails, parts = map[string][]format.Record{}, runbookPartitions(t, addrs, topics...)
	n := 0
	for _, topic := range topics {
		recs := runbookRecords(t, addrs, topic)
		for p := range int32(parts[topic]) {
			key := fmt.Sprintf("%s/%d", topic, p)
			from := int64(0)
			if so, ok := starts.Lookup(topic, p); ok {
				from = so.Offset
			}
			if c, ok := committed[key]; ok {
				from = max(from, c)
			}
			tails[key] = []format.Record{}
			for _, r := range recs {
				if r.Partition == p && r.Offset >= from {
					tails[key] = append(tails[key], r)
				}
			}
			n += len(tails[key])
		}
	}
	if n == 0 {
		t.Fatalf("no record in flight in %v on the source: the restore of the tails would test nothing", topics)
	}
	return tails, parts
}

// runbookPartitions returns the partition count of each of topics on the
// cluster at addrs.
func runbookPartitions(t *testing.T, addrs []string, topics ...string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	td, err := testkit.Admin(t, addrs).ListTopics(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for name, d := range td {
		out[name] = len(d.Partitions)
	}
	return out
}

// runbookTopics returns the topics on the cluster at addrs (without the
// broker's own).
func runbookTopics(t *testing.T, addrs []string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	td, err := testkit.Admin(t, addrs).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range td.Sorted() {
		if !strings.HasPrefix(d.Topic, "__") {
			names = append(names, d.Topic)
		}
	}
	return names
}

// TestRunbook runs the commands of docs/OPERATIONS.md's runbook, as
// written (same flags), in order, through the real binary and bash, against
// real servers: a source kfake cluster seeded with the sample application
// and backed up into a directory; the standby checks while it lives; then
// the source is stopped (the disaster) and the backup is assessed and
// restored into one new cluster with the changelog strategy and into
// another with the rebuild strategy cut at a point in time, each followed
// by the state check, wipe and check of an instance whose local state
// predates the restore; and the drill section's command into a third,
// scratch cluster. Each command must exit as its comment says, and the
// clusters must then hold what the strategy promises.
func TestRunbook(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts four kfake clusters and runs the binary")
	}
	blocks := runbookBlocks(t)
	for _, name := range []string{"env", "assess", "changelog", "rebuild", "rebuild-to-time", "standby", "drill"} {
		if len(blocks[name]) == 0 {
			t.Fatalf("%s has no <!-- runbook:%s --> block with commands", runbookDoc, name)
		}
	}
	declared := runbookEnv(t, blocks["env"])
	for _, c := range blocks["env"] {
		if v, ok := strings.CutPrefix(c.line, "BACKUP_ID="); ok && strings.HasPrefix(strings.Trim(v, `'"`), "latest") {
			t.Errorf("%s:%d: BACKUP_ID=latest: the runbook must name one backup id (from list) so that verify and restore act on the same backup", runbookDoc, c.at)
		}
	}

	work := t.TempDir()
	bin := filepath.Join(work, "bin")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "kafkastreams-dr"), "../cmd/kafkastreams-dr").CombinedOutput(); err != nil {
		t.Fatalf("build kafkastreams-dr: %v\n%s", err, out)
	}
	r := &runbookRunner{t: t, bin: bin, declared: declared, dir: work}
	repo := filepath.Join(work, "repo")

	src := testkit.StartKfake(t, 3)
	seedStart := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := sample.Seed(ctx, testkit.Client(t, src.Addrs())); err != nil {
		t.Fatal(err)
	}
	srcOffsets := runbookGroupOffsets(t, src.Addrs())
	backupCfg := runbookConfig(t, work, "backup.yaml", src.Bootstrap(), repo, "")
	// The CronJob's backups, before anything goes wrong.
	runbookBinary(t, bin, work, "backup", "-c", backupCfg)

	// vars are the runbook's placeholders for one scenario: none of the
	// point-in-time ones unless the scenario sets them. BACKUP_ID is an
	// explicit id (the one `list` shows), never "latest", except in the
	// standby scenario, whose commands do not use it. APP_NAMESPACE and
	// APP_SELECTOR are for the runbook's kubectl steps, which the test
	// does not run; they must be declared all the same.
	vars := func(config, backupID, stateDir string) map[string]string {
		return map[string]string{"CONFIG": config, "BACKUP_ID": backupID, "APP_ID": sample.AppID, "STATE_DIR": stateDir, "TO_TIME": "", "PITR_TOPICS": "",
			"APP_NAMESPACE": "streams", "APP_SELECTOR": "app.kubernetes.io/name=" + sample.AppID}
	}

	// An instance was lost, the cluster lives: nothing to restore.
	t.Run("standby", func(t *testing.T) {
		r.t = t
		r.run("standby", blocks["standby"], vars(backupCfg, "latest", t.TempDir()))
	})
	if t.Failed() {
		return
	}
	var summary struct {
		BackupID string `json:"backup_id"`
	}
	out := runbookBinary(t, bin, work, "backup", "-c", backupCfg, "--json")
	if err := json.Unmarshal(out, &summary); err != nil || summary.BackupID == "" {
		t.Fatalf("backup --json: no backup_id (%v):\n%s", err, out)
	}

	// What was in flight when the last backup was taken (nothing writes
	// after it).
	srcTails, tailParts := runbookTails(t, src.Addrs(), srcOffsets)

	// The disaster.
	src.Close()

	t.Run("changelog", func(t *testing.T) {
		r.t = t
		dst := testkit.StartKfake(t, 3)
		cfg := runbookConfig(t, t.TempDir(), "restore.yaml", src.Bootstrap(), repo, dst.Bootstrap())
		v := vars(cfg, summary.BackupID, runbookStaleState(t))
		r.run("assess", blocks["assess"], v)
		r.run("changelog", blocks["changelog"], v)

		// The backed-up topics and the in-flight ones (the repartition
		// and FK-subscription topics, invariant 38).
		if got, want := runbookTopics(t, dst.Addrs()), slices.Sorted(slices.Values(append(slices.Clone(sample.BackedUp), sample.Repartition, sample.FKTopic))); !slices.Equal(got, want) {
			t.Errorf("topics on the new cluster: %v, want the backed-up and in-flight %v", got, want)
		}
		// The group's offsets, translated: orders has no holes (same
		// offsets); payments lost its first 8 records before the backup
		// (15 -> 7); every in-flight partition (committed on the lost
		// cluster or not) at the first restored record of its tail, which
		// holds the lost cluster's records from the committed offset (else
		// the log start) to the cut.
		got := runbookGroupOffsets(t, dst.Addrs())
		for topic, n := range tailParts {
			recs := runbookRecords(t, dst.Addrs(), topic)
			for p := range int32(n) {
				key := fmt.Sprintf("%s/%d", topic, p)
				var restored []format.Record
				for _, r := range recs {
					if r.Partition == p {
						restored = append(restored, r)
					}
				}
				restorecheck.SameRecords(t, "in-flight "+key+" on the new cluster", restored, srcTails[key], false)
				first := int64(len(restored)) // the log end when nothing was in flight
				if len(restored) > 0 {
					first = restored[0].Offset
				}
				if o, ok := got[key]; !ok || o != first {
					t.Errorf("group offset of %s on the new cluster: %d (committed %v), want %d, the first restored record of the tail (%v on the lost cluster)", key, o, ok, first, srcOffsets[key])
				}
			}
		}
		if dstParts := runbookPartitions(t, dst.Addrs(), sample.Repartition, sample.FKTopic); !maps.Equal(dstParts, tailParts) {
			t.Errorf("in-flight topics on the new cluster with partitions %v, the lost cluster had %v", dstParts, tailParts)
		}
		for tp, o := range srcOffsets {
			want := o
			switch {
			case strings.HasPrefix(tp, sample.Repartition+"/"), strings.HasPrefix(tp, sample.FKTopic+"/"):
				continue // in flight: above
			case tp == sample.Payments+"/0":
				want = o - 8
			case strings.HasPrefix(tp, sample.Customers+"/"):
				continue // compacted: translated to the first record at or after it
			}
			if got[tp] != want {
				t.Errorf("group offset of %s on the new cluster: %d, want %d (%d on the lost cluster)", tp, got[tp], want, o)
			}
		}
		if _, err := os.Stat(filepath.Join(v["STATE_DIR"], sample.AppID)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the stale state of %s is still there after the runbook's wipe: %v", sample.AppID, err)
		}
	})

	t.Run("rebuild", func(t *testing.T) {
		r.t = t
		dst := testkit.StartKfake(t, 3)
		cfg := runbookConfig(t, t.TempDir(), "restore.yaml", src.Bootstrap(), repo, dst.Bootstrap())
		v := vars(cfg, summary.BackupID, runbookStaleState(t))
		r.run("rebuild", blocks["rebuild"], v)

		topics := runbookTopics(t, dst.Addrs())
		if want := []string{sample.Audit, sample.Totals, sample.Customers, sample.Orders, sample.Payments}; !slices.Equal(topics, want) {
			t.Errorf("topics after the rebuild: %v, want the inputs and outputs %v (no changelog but the source-topic one)", topics, want)
		}
		runbookCheckRebuildOffsets(t, dst.Addrs())
		if n := len(runbookRecords(t, dst.Addrs(), sample.Orders)); n != 60 {
			t.Errorf("%d records of %s restored, want all 60", n, sample.Orders)
		}
		if _, err := os.Stat(filepath.Join(v["STATE_DIR"], sample.AppID)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the stale state of %s is still there after the runbook's wipe: %v", sample.AppID, err)
		}
	})

	t.Run("rebuild-to-time", func(t *testing.T) {
		r.t = t
		dst := testkit.StartKfake(t, 3)
		cfg := runbookConfig(t, t.TempDir(), "restore.yaml", src.Bootstrap(), repo, dst.Bootstrap())
		// The sample's records are stamped one second apart from two hours
		// before the seed: cut after about the first 30 orders.
		cut := seedStart.Add(-2 * time.Hour).Truncate(time.Second).Add(30 * time.Second)
		v := vars(cfg, summary.BackupID, t.TempDir())
		v["TO_TIME"] = cut.UTC().Format(time.RFC3339)
		// Every backed-up topic but the source-topic changelog customers.
		v["PITR_TOPICS"] = strings.Join([]string{sample.Orders, sample.Payments, sample.Totals, sample.Audit, sample.AppID + "-*"}, ",")
		r.run("rebuild-to-time", blocks["rebuild-to-time"], v)

		topics := runbookTopics(t, dst.Addrs())
		if want := []string{sample.Audit, sample.Totals, sample.Orders, sample.Payments}; !slices.Equal(topics, want) {
			t.Errorf("topics after the point-in-time rebuild: %v, want %v", topics, want)
		}
		runbookCheckRebuildOffsets(t, dst.Addrs())
		recs := runbookRecords(t, dst.Addrs(), sample.Orders)
		for _, rec := range recs {
			if ts := time.UnixMilli(rec.Timestamp); ts.After(cut) {
				t.Errorf("%s/%d offset %d: timestamp %s after the cut %s", sample.Orders, rec.Partition, rec.Offset, ts.UTC().Format(time.RFC3339), cut.UTC().Format(time.RFC3339))
			}
		}
		if n := len(recs); n == 0 || n >= 60 {
			t.Errorf("%d records of %s restored up to the cut, want some of the 60, not all", n, sample.Orders)
		}
	})

	t.Run("drill", func(t *testing.T) {
		r.t = t
		scratch := testkit.StartKfake(t, 3)
		cfg := runbookConfig(t, t.TempDir(), "drill.yaml", src.Bootstrap(), repo, scratch.Bootstrap())
		r.dir = t.TempDir()
		r.run("drill", blocks["drill"], vars(cfg, summary.BackupID, t.TempDir()))
		junit, err := os.ReadFile(filepath.Join(r.dir, "drill-junit.xml"))
		if err != nil {
			t.Fatalf("the drill wrote no JUnit report: %v", err)
		}
		var suites struct {
			Failures int `xml:"failures,attr"`
			Tests    int `xml:"tests,attr"`
			Suites   []struct {
				Failures int `xml:"failures,attr"`
				Tests    int `xml:"tests,attr"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal(junit, &suites); err != nil {
			t.Fatalf("drill-junit.xml: %v", err)
		}
		failures, tests := suites.Failures, suites.Tests
		for _, s := range suites.Suites {
			failures += s.Failures
			tests += s.Tests
		}
		if failures != 0 || tests == 0 {
			t.Errorf("drill-junit.xml: %d tests, %d failures, want some and none:\n%s", tests, failures, junit)
		}
	})
}

// runbookCheckRebuildOffsets checks that after a rebuild every committed
// offset of the group is 0: the start of the restored data.
func runbookCheckRebuildOffsets(t *testing.T, addrs []string) {
	t.Helper()
	got := runbookGroupOffsets(t, addrs)
	if len(got) == 0 {
		t.Errorf("no group offsets on the new cluster after the rebuild")
	}
	for tp, o := range got {
		if o != 0 {
			t.Errorf("group offset of %s after the rebuild: %d, want 0 (the start of the restored data)", tp, o)
		}
	}
}

// runbookBinary runs the built binary outside the runbook (the test's own
// setup) and returns its stdout; it fails the test unless it exits 0.
func runbookBinary(t *testing.T, bin, dir string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "kafkastreams-dr"), args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kafkastreams-dr %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}
