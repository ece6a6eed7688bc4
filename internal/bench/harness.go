package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// Variant is one way of running kafkastreams-dr: the extra flags of its
// backup and restore commands and extra keys of the config's backup:
// section. Variants lists what every case runs; a new CLI mode is one more
// entry, e.g. {Name: "batch", BackupArgs: []string{"--segment-kind", "batch"}}.
type Variant struct {
	Name         string // "" for the default; else shown after the tool's name
	BackupArgs   []string
	RestoreArgs  []string
	BackupConfig map[string]string // e.g. {"compression": "zstd"}
	// StorageConfig are extra keys of the storage: section, e.g.
	// {"upload_buffer_bytes": "32MiB"}.
	StorageConfig map[string]string
}

// Variants are the kafkastreams-dr runs of every case, in order. The first
// is the one profiled and judged against the targets.
var Variants = []Variant{{}}

// AllCases are the case letters: (a) ~1 GiB over 12 partitions,
// (b) 2 and 4 GiB (memory), (c) 2,000 small partitions, (d) (c) to S3,
// (e) the offsets of 1,000 partitions.
var AllCases = []string{"a", "b", "c", "d", "e"}

// Options configure Run.
type Options struct {
	// Cases to run, a subset of AllCases; nil for all.
	Cases []string
	// Rounds of each case with baselines (at least 1; the document asks
	// for 3 or more). MemoryRounds for case (b), default 1.
	Rounds, MemoryRounds int
	// Scale multiplies the data sizes of (a) and (b) and the records per
	// partition of (c): 1 is the sizes.
	Scale float64
	// ManyPartitions is (c)'s and (d)'s partition count (default 2,000),
	// OffsetPartitions (e)'s (default 1,000).
	ManyPartitions, OffsetPartitions int
	// S3Case is the case whose data case d backs up to S3: "c" (the
	// default: 2,000 partitions) or "a" (~1 GiB over 12 partitions).
	S3Case string
	// Profile runs ours once more per main case with --cpuprofile.
	Profile bool
	// Binary is a built kafkastreams-dr; "" builds bin/kafkastreams-dr in
	// the module's root.
	Binary string
	// Wrapper is the rusage wrapper (kdrbench's own path, see Measure);
	// "" reads the rusage directly, the harness's own peak RSS a floor.
	Wrapper string
	// OSO is OSO kafka-backup's binary (FindOSO), measured beside ours in
	// cases (a) and (c); "" leaves it out (the targets that compare with it
	// say "not measured").
	OSO string
	// WorkDir is where the temporary directory goes ("" for os.TempDir()).
	WorkDir string
	// Log receives progress lines (nil: discarded).
	Log io.Writer
}

func (o *Options) defaults() {
	if len(o.Cases) == 0 {
		o.Cases = AllCases
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.MemoryRounds <= 0 {
		o.MemoryRounds = 1
	}
	if o.Scale <= 0 {
		o.Scale = 1
	}
	if o.ManyPartitions <= 0 {
		o.ManyPartitions = 2000
	}
	if o.OffsetPartitions <= 0 {
		o.OffsetPartitions = 1000
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.S3Case == "" {
		o.S3Case = "c"
	}
}

// env is one run's servers and tools.
type env struct {
	o       Options
	dir     string
	bin     string
	kcat    string
	zstd    string
	oso     string
	kafka   *testkit.Kafka
	adm     *kadm.Client
	cl      *kgo.Client
	s3      *testkit.S3Server
	pushes  *pushReceiver
	runs    int
	started time.Time
}

// Run starts the broker (and versitygw when case d is selected), runs the
// selected cases and returns the report. Every server and the temporary
// directory are stopped and removed before it returns, on every path
// (ctx's end included: the measured process is killed).
func Run(ctx context.Context, o Options) (*Report, error) {
	o.defaults()
	for _, c := range o.Cases {
		if !slices.Contains(AllCases, c) {
			return nil, fmt.Errorf("unknown case %q (BENCH_CASES): the cases are %s", c, strings.Join(AllCases, ","))
		}
	}
	if o.S3Case != "a" && o.S3Case != "c" {
		return nil, fmt.Errorf("BENCH_S3_CASE=%q: case d backs up the data of case a or c", o.S3Case)
	}
	e := &env{o: o, started: time.Now()}
	var err error
	if e.dir, err = os.MkdirTemp(o.WorkDir, "kdrbench-"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(e.dir)

	if e.bin, err = buildBinary(ctx, o.Binary); err != nil {
		return nil, err
	}
	if e.kcat, err = testkit.KcatBinary(); err != nil {
		return nil, err
	}
	if e.zstd, err = exec.LookPath("zstd"); err != nil {
		return nil, fmt.Errorf("zstd not found on $PATH (the naive backup baseline): apt-get install zstd")
	}
	var osoVer string
	if o.OSO != "" {
		if osoVer, err = osoVersion(ctx, o.OSO); err != nil {
			return nil, err
		}
		e.oso = o.OSO
	}
	e.logf("starting Apache Kafka %s", testkit.KafkaVersion)
	e.kafka, err = testkit.LaunchKafka(e.dir,
		testkit.KafkaProperty("num.io.threads", "4"),
		testkit.KafkaProperty("num.network.threads", "3"))
	if err != nil {
		return nil, err
	}
	defer e.kafka.Stop()
	if slices.Contains(o.Cases, "d") {
		srv, stop, err := testkit.LaunchS3(ctx, filepath.Join(e.dir, "s3"))
		if err != nil {
			return nil, err
		}
		defer stop()
		e.s3 = &srv
	}
	if e.cl, err = kgo.NewClient(kgo.SeedBrokers(e.kafka.Addrs()...)); err != nil {
		return nil, err
	}
	defer e.cl.Close()
	e.adm = kadm.NewClient(e.cl)
	e.pushes = newPushReceiver()
	defer e.pushes.Close()

	rep := &Report{Machine: machineInfo(ctx, e.kcat, e.zstd), Started: e.started, Rounds: o.Rounds, Scale: o.Scale}
	rep.Machine.OSO = osoVer
	sel := func(id string) bool { return slices.Contains(o.Cases, id) }
	steps := []struct {
		on  bool
		run func(context.Context) ([]*Case, error)
	}{
		{sel("a") || sel("d") && o.S3Case == "a", e.caseA},
		{sel("b"), e.caseB},
		{sel("c") || sel("d") && o.S3Case == "c", e.caseCD},
		{sel("e"), e.caseE},
	}
	for _, s := range steps {
		if !s.on {
			continue
		}
		cs, err := s.run(ctx)
		if err != nil {
			return nil, err
		}
		rep.Cases = append(rep.Cases, cs...)
	}
	switch {
	case e.oso == "":
		rep.OSO = "neither " + OSOEnv + " nor $PATH names its kafka-backup binary"
	case !sel("a") && !sel("c"):
		rep.OSO = "it runs in cases (a) and (c) only, and neither was selected (BENCH_CASES)"
	}
	rep.Elapsed = time.Since(e.started)
	rep.Targets = Judge(rep.Cases)
	return rep, nil
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.o.Log, "kdrbench %s: %s\n", time.Since(e.started).Round(time.Second), fmt.Sprintf(format, args...))
}

// buildBinary builds bin/kafkastreams-dr in the module root, unless bin is
// given.
func buildBinary(ctx context.Context, bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		return "", fmt.Errorf("find the module root (go env GOMOD): run kdrbench from the repository (%v)", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin = filepath.Join(root, "bin", "kafkastreams-dr")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kafkastreams-dr")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kafkastreams-dr: %w\n%s", err, out)
	}
	return bin, nil
}

// bench is one case's data and its measured operations.
type bench struct {
	e      *env
	c      *Case
	ds     Dataset
	dumps  map[string]string // topic -> kcat dump (key TAB value lines) for kcat -P
	stores []string          // "dir", "s3"
	// baselines runs the kcat rows; restore runs the restores; oso runs
	// OSO kafka-backup's backup and restore (to a directory) too.
	baselines, restore, oso bool
	rounds                  int
}

func (e *env) caseA(ctx context.Context) ([]*Case, error) {
	gib := int64(float64(1<<30) * e.o.Scale)
	ds := Dataset{AppID: "kdrbench-a", Topics: []TopicSpec{
		{Name: "orders-a", Partitions: 12, Bytes: gib * 15 / 16},
		{Name: "customers-a", Partitions: 12, Compact: true, Bytes: gib / 16},
	}}
	b := &bench{e: e, ds: ds, stores: e.storesOf("a"), baselines: true, restore: true, rounds: e.o.Rounds,
		c: &Case{ID: "a"}}
	b.oso = e.oso != "" && slices.Contains(b.stores, "dir")
	if err := b.generate(ctx); err != nil {
		return nil, err
	}
	b.c.Title = fmt.Sprintf("%s over 12 partitions (the issue's ~1 GiB at scale 1)", fmtBytes(b.c.Bytes))
	if err := b.runRounds(ctx); err != nil {
		return nil, err
	}
	for _, st := range b.stores {
		if err := b.profile(ctx, st); err != nil {
			return nil, err
		}
	}
	return b.splitByStore("S3 (versitygw): case (a)'s data"), b.drop(ctx)
}

// storesOf is where case id's backups go: a directory when the case is
// selected, S3 too when it is case d's data (BENCH_S3_CASE).
func (e *env) storesOf(id string) []string {
	var st []string
	if slices.Contains(e.o.Cases, id) {
		st = append(st, "dir")
	}
	if slices.Contains(e.o.Cases, "d") && e.o.S3Case == id {
		st = append(st, "s3")
	}
	return st
}

// splitByStore makes one case of the runs per store: the directory's rows
// under the case's own letter, S3's under (d) with titleD; both keep the
// kcat baselines (the same data, the same rounds), and a baseline of a
// store (OSO's → dir) stays with its store.
func (b *bench) splitByStore(titleD string) []*Case {
	var out []*Case
	for _, st := range b.stores {
		c := *b.c
		c.Rows, c.Profiles = nil, nil
		if st == "s3" {
			c.ID, c.Title = "d", titleD
		}
		for _, r := range b.c.Rows {
			ofStore := strings.HasSuffix(r.Tool, storeSuffix("dir")) || strings.HasSuffix(r.Tool, storeSuffix("s3"))
			if r.Baseline && !ofStore || strings.HasSuffix(r.Tool, storeSuffix(st)) {
				c.Rows = append(c.Rows, r)
			}
		}
		for _, p := range b.c.Profiles {
			if strings.Contains(p.Run, storeSuffix(st)) {
				c.Profiles = append(c.Profiles, p)
			}
		}
		out = append(out, &c)
	}
	return out
}

func (e *env) caseB(ctx context.Context) ([]*Case, error) {
	var out []*Case
	step := int64(float64(2<<30) * e.o.Scale)
	ds := Dataset{AppID: "kdrbench-b", Topics: []TopicSpec{{Name: "orders-b", Partitions: 12}}}
	b := &bench{e: e, ds: ds, stores: []string{"dir"}, restore: true, rounds: e.o.MemoryRounds}
	var records, bytes int64
	for i, size := range []string{"2 GiB", "4 GiB"} { // the second adds 2 GiB to the first's
		b.ds.Topics[0].Bytes = step
		b.c = &Case{ID: "b"}
		e.logf("case b: generating %s more", fmtBytes(step))
		p, err := Generate(ctx, e.kafka.Addrs(), b.ds, uint64(10+i))
		if err != nil {
			return nil, err
		}
		records += p.Records
		bytes += p.Bytes
		b.c.Records, b.c.Bytes, b.c.Partitions = records, bytes, 12
		b.c.Title = fmt.Sprintf("%s over 12 partitions, memory (the issue's %s at scale 1)", fmtBytes(bytes), size)
		b.c.Data = dataWords(b.c, b.ds)
		if err := b.runRounds(ctx); err != nil {
			return nil, err
		}
		out = append(out, b.c)
	}
	return out, b.drop(ctx)
}

func (e *env) caseCD(ctx context.Context) ([]*Case, error) {
	n := int32(e.o.ManyPartitions)
	per := max(int64(50*e.o.Scale), 1)
	ds := Dataset{AppID: "kdrbench-c", Topics: []TopicSpec{
		{Name: "events-c", Partitions: n * 3 / 4, Records: per},
		{Name: "profiles-c", Partitions: n - n*3/4, Compact: true, Records: per},
	}}
	b := &bench{e: e, ds: ds, baselines: true, restore: true, rounds: e.o.Rounds,
		c: &Case{ID: "c", Title: fmt.Sprintf("%d partitions of small data", n)}}
	b.stores = e.storesOf("c")
	b.oso = e.oso != "" && slices.Contains(b.stores, "dir")
	if err := b.generate(ctx); err != nil {
		return nil, err
	}
	if err := b.runRounds(ctx); err != nil {
		return nil, err
	}
	for _, st := range b.stores {
		if err := b.profile(ctx, st); err != nil {
			return nil, err
		}
	}
	return b.splitByStore(fmt.Sprintf("S3 (versitygw): case (c)'s %d partitions", n)), b.drop(ctx)
}

func (e *env) caseE(ctx context.Context) ([]*Case, error) {
	n := int32(e.o.OffsetPartitions)
	ds := Dataset{AppID: "kdrbench-e", Topics: []TopicSpec{{Name: "orders-e", Partitions: n, Records: 1}}}
	b := &bench{e: e, ds: ds, stores: []string{"dir"}, restore: true, rounds: e.o.Rounds,
		c: &Case{ID: "e", Title: fmt.Sprintf("offsets of %d partitions", n)}}
	if err := b.generate(ctx); err != nil {
		return nil, err
	}
	if err := b.runRounds(ctx); err != nil {
		return nil, err
	}
	return []*Case{b.c}, b.drop(ctx)
}

func dataWords(c *Case, ds Dataset) string {
	var ts []string
	for _, t := range ds.Topics {
		kind := "delete"
		if t.Compact {
			kind = "compact"
		}
		ts = append(ts, fmt.Sprintf("%s (%d partitions, cleanup.policy=%s)", t.Name, t.Partitions, kind))
	}
	return fmt.Sprintf("%d records, %s (keys, values, headers) in %s; producer compression %s; group %s committed on every partition of the delete topics",
		c.Records, fmtBytes(c.Bytes), strings.Join(ts, ", "), ProducerCompression, ds.AppID)
}

// generate produces the case's data and, for the baselines, dumps each
// topic with kcat (key TAB value lines) for kcat -P.
func (b *bench) generate(ctx context.Context) error {
	b.e.logf("case %s: generating data", b.c.ID)
	p, err := Generate(ctx, b.e.kafka.Addrs(), b.ds, uint64(len(b.c.ID)*7+int(b.c.ID[0])))
	if err != nil {
		return err
	}
	b.c.Records, b.c.Bytes, b.c.Partitions = p.Records, p.Bytes, p.Partitions
	b.c.Data = dataWords(b.c, b.ds)
	if !b.baselines {
		return nil
	}
	b.dumps = map[string]string{}
	for _, t := range b.ds.Topics {
		f := filepath.Join(b.e.dir, "dump-"+t.Name+".txt")
		cmd := exec.CommandContext(ctx, "bash", "-c", fmt.Sprintf("%s -C -b %s -q -e -o beginning -t %s -f '%%k\\t%%s\\n' > %s",
			b.e.kcat, b.e.kafka.Bootstrap(), t.Name, f))
		if _, err := Measure(ctx, b.e.o.Wrapper, cmd); err != nil {
			return fmt.Errorf("dump %s for kcat -P: %w", t.Name, err)
		}
		b.dumps[t.Name] = f
	}
	return nil
}

// drop deletes the case's topics and group: the next case starts clean.
func (b *bench) drop(ctx context.Context) error { return b.e.reset(ctx, b.ds) }

func storeSuffix(store string) string {
	if store == "s3" {
		return " → S3"
	}
	return " → dir"
}

func variantName(v Variant) string {
	if v.Name == "" {
		return "kafkastreams-dr"
	}
	return "kafkastreams-dr [" + v.Name + "]"
}

// op is one measured run of a round.
type op struct {
	tool     string
	kind     string // backup, restore
	baseline bool
	// retry runs it once more when it fails: the restores, ours and OSO's
	// (each starts by deleting the topics and the group).
	retry bool
	run   func(ctx context.Context, round int) (Sample, int64, map[string]float64, error)
}

// runRounds runs every round: the backups and kcat reads in an order that
// rotates each round, then the restores (kcat -P first, then OSO's, ours
// last, so the topics hold ours' byte-exact copy for the next round's
// reads).
func (b *bench) runRounds(ctx context.Context) error {
	var reads, writes []op
	if b.baselines {
		reads = append(reads, op{tool: "kcat -C > /dev/null", kind: "backup", baseline: true, run: b.kcatNull},
			op{tool: "kcat -C | zstd -3 > file", kind: "backup", baseline: true, run: b.kcatZstd})
		if b.restore {
			writes = append(writes, op{tool: "kcat -P", kind: "restore", baseline: true, run: b.kcatProduce})
		}
	}
	if b.oso {
		reads = append(reads, op{tool: osoBackupTool, kind: "backup", baseline: true, run: b.osoBackup})
		if b.restore {
			writes = append(writes, op{tool: osoRestoreTool, kind: "restore", baseline: true, retry: true, run: b.osoRestore})
		}
	}
	for _, v := range Variants {
		for _, st := range b.stores {
			reads = append(reads, op{tool: variantName(v) + " backup" + storeSuffix(st), kind: "backup", run: b.oursBackup(v, st, false)})
			if b.restore {
				writes = append(writes, op{tool: variantName(v) + " restore" + storeSuffix(st), kind: "restore", retry: true, run: b.oursRestore(v, st, false)})
			}
		}
	}
	return b.runOps(ctx, reads, writes)
}

// runOps runs b.rounds rounds of reads, rotated by one each round, then
// writes, into b.c's rows. A failed op with retry runs once more, noted
// in the document; a second failure, or any failure of another op, is the
// error.
func (b *bench) runOps(ctx context.Context, reads, writes []op) error {
	for r := range b.rounds {
		order := slices.Clone(reads)
		if len(order) > 0 {
			k := r % len(order)
			order = append(order[k:], order[:k]...)
		}
		for _, o := range append(order, writes...) {
			b.e.logf("case %s round %d/%d: %s", b.c.ID, r+1, b.rounds, o.tool)
			s, stored, phases, err := o.run(ctx, r)
			if err != nil && o.retry && !errors.Is(err, errWrongCount) && ctx.Err() == nil {
				// A restore starts by deleting the topics and the group, so a
				// second run is as fresh as the first: run it once more, and
				// say so in the document. A restore that left the wrong
				// number of records is not run again.
				b.c.Notes = append(b.c.Notes, fmt.Sprintf("round %d: %s failed and was run again from the start (its figures are the second run's): %s",
					r+1, o.tool, lastLine(err.Error())))
				b.e.logf("case %s round %d: %s failed, running it again: %v", b.c.ID, r+1, o.tool, err)
				s, stored, phases, err = o.run(ctx, r)
			}
			if err != nil {
				return fmt.Errorf("case %s round %d: %s: %w", b.c.ID, r+1, o.tool, err)
			}
			row := b.c.row(o.tool, o.kind, o.baseline)
			row.Samples = append(row.Samples, s)
			row.Stored = append(row.Stored, stored)
			row.Phases = append(row.Phases, phases)
		}
	}
	return nil
}

// profile runs each variant's backup and restore once more with
// --cpuprofile, into a repository of their own.
func (b *bench) profile(ctx context.Context, store string) error {
	if !b.e.o.Profile {
		return nil
	}
	for _, v := range Variants {
		if err := b.profileVariant(ctx, v, store); err != nil {
			return err
		}
	}
	return nil
}

// variantTag is the suffix a variant's profile run carries: "" for the
// default, " [NAME]" else.
func variantTag(v Variant) string {
	if v.Name == "" {
		return ""
	}
	return " [" + v.Name + "]"
}

func (b *bench) profileVariant(ctx context.Context, v Variant, store string) error {
	for _, kind := range []string{"backup", "restore"} {
		var err error
		if kind == "backup" {
			_, _, _, err = b.oursBackup(v, store, true)(ctx, -1)
		} else {
			_, _, _, err = b.oursRestore(v, store, true)(ctx, -1)
		}
		if err != nil {
			return fmt.Errorf("case %s: profiled %s: %w", b.c.ID, kind, err)
		}
		p, err := readProfile(ctx, b.e.bin, filepath.Join(b.repoDir(v, store, -1), "cpu-"+kind+".pprof"))
		if err != nil {
			return err
		}
		p.Run = kind + " of case " + b.c.ID + storeSuffix(store) + variantTag(v)
		b.c.Profiles = append(b.c.Profiles, p)
	}
	return nil
}

func (b *bench) repoDir(v Variant, store string, round int) string {
	name := v.Name
	if name == "" {
		name = "default"
	}
	tag := fmt.Sprintf("r%d", round)
	if round < 0 {
		tag = "profile"
	}
	return filepath.Join(b.e.dir, "case-"+b.c.ID, name+"-"+store+"-"+tag)
}

// config writes the kafkastreams-dr config of one repository.
func (b *bench) config(v Variant, store string, round int) (string, error) {
	dir := b.repoDir(v, store, round)
	if err := os.MkdirAll(filepath.Join(dir, "repo"), 0o755); err != nil {
		return "", err
	}
	var names []string
	for _, t := range b.ds.Topics {
		names = append(names, t.Name)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "application_id: %s\n", b.ds.AppID)
	fmt.Fprintf(&sb, "source:\n  bootstrap_servers: [%s]\n  topics:\n    include: [%s]\n", b.e.kafka.Bootstrap(), strings.Join(names, ", "))
	fmt.Fprintf(&sb, "target:\n  bootstrap_servers: [%s]\n", b.e.kafka.Bootstrap())
	if store == "s3" {
		fmt.Fprintf(&sb, "storage:\n  backend: s3\n  bucket: %s\n  prefix: %s\n  region: %s\n  endpoint: %s\n  path_style: true\n",
			b.e.s3.Bucket, b.s3Prefix(v, round), b.e.s3.Region, b.e.s3.Endpoint)
	} else {
		fmt.Fprintf(&sb, "storage:\n  backend: filesystem\n  path: %s\n", filepath.Join(dir, "repo"))
	}
	for _, k := range slices.Sorted(mapsKeys(v.StorageConfig)) {
		fmt.Fprintf(&sb, "  %s: %s\n", k, v.StorageConfig[k])
	}
	if len(v.BackupConfig) > 0 {
		sb.WriteString("backup:\n")
		for _, k := range slices.Sorted(mapsKeys(v.BackupConfig)) {
			fmt.Fprintf(&sb, "  %s: %s\n", k, v.BackupConfig[k])
		}
	}
	f := filepath.Join(dir, "config.yaml")
	return f, os.WriteFile(f, []byte(sb.String()), 0o644)
}

func (b *bench) s3Prefix(v Variant, round int) string {
	return strings.TrimPrefix(b.repoDir(v, "s3", round), b.e.dir+string(filepath.Separator))
}

// ours runs one kafkastreams-dr command with the repository's config,
// pushing its metrics to the harness (for the phase durations).
func (b *bench) ours(ctx context.Context, v Variant, store string, round int, profile bool, args ...string) (Sample, map[string]float64, error) {
	cfg, err := b.config(v, store, round)
	if err != nil {
		return Sample{}, nil, err
	}
	b.e.runs++
	job := fmt.Sprintf("kdrbench-%d", b.e.runs)
	full := []string{args[0], "-c", cfg, "--push-gateway", b.e.pushes.URL(), "--push-job", job, "--log-level", "warn"}
	if profile {
		full = append(full, "--cpuprofile", filepath.Join(b.repoDir(v, store, round), "cpu-"+args[0]+".pprof"))
	}
	full = append(full, args[1:]...)
	cmd := exec.CommandContext(ctx, b.e.bin, full...)
	cmd.Env = os.Environ()
	if store == "s3" {
		cmd.Env = append(cmd.Env, b.e.s3.Env()...)
		cmd.Env = append(cmd.Env, "AWS_EC2_METADATA_DISABLED=true",
			"AWS_CONFIG_FILE="+filepath.Join(b.e.dir, "no-aws-config"),
			"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(b.e.dir, "no-aws-credentials"))
	}
	s, err := Measure(ctx, b.e.o.Wrapper, cmd)
	if err != nil {
		return Sample{}, nil, err
	}
	return s, b.e.pushes.Phases(job), nil
}

func (b *bench) oursBackup(v Variant, store string, profile bool) func(context.Context, int) (Sample, int64, map[string]float64, error) {
	return func(ctx context.Context, round int) (Sample, int64, map[string]float64, error) {
		s, ph, err := b.ours(ctx, v, store, round, profile, append([]string{"backup", "--json"}, v.BackupArgs...)...)
		if err != nil {
			return Sample{}, 0, nil, err
		}
		var stored int64
		if store == "s3" {
			stored, err = duBytes(filepath.Join(b.e.s3.Dir, b.e.s3.Bucket, b.s3Prefix(v, round)))
		} else {
			stored, err = duBytes(filepath.Join(b.repoDir(v, store, round), "repo"))
		}
		return s, stored, ph, err
	}
}

func (b *bench) oursRestore(v Variant, store string, profile bool) func(context.Context, int) (Sample, int64, map[string]float64, error) {
	return func(ctx context.Context, round int) (Sample, int64, map[string]float64, error) {
		if err := b.e.reset(ctx, b.ds); err != nil {
			return Sample{}, 0, nil, err
		}
		// Every measured restore is the first of its backup: no journal of
		// an earlier (failed) run to resume from.
		restores := filepath.Join(b.repoDir(v, store, round), "repo", "restores")
		if store == "s3" {
			restores = filepath.Join(b.e.s3.Dir, b.e.s3.Bucket, b.s3Prefix(v, round), "restores")
		}
		if err := os.RemoveAll(restores); err != nil {
			return Sample{}, 0, nil, err
		}
		s, ph, err := b.ours(ctx, v, store, round, profile, append([]string{"restore", "--yes", "--json"}, v.RestoreArgs...)...)
		return s, 0, ph, err
	}
}

func (b *bench) kcatNull(ctx context.Context, _ int) (Sample, int64, map[string]float64, error) {
	var sh []string
	for _, t := range b.ds.Topics {
		sh = append(sh, fmt.Sprintf("%s -C -b %s -q -e -o beginning -t %s > /dev/null", b.e.kcat, b.e.kafka.Bootstrap(), t.Name))
	}
	s, err := Measure(ctx, b.e.o.Wrapper, exec.CommandContext(ctx, "bash", "-c", "set -eo pipefail; "+strings.Join(sh, "; ")))
	return s, 0, nil, err
}

func (b *bench) kcatZstd(ctx context.Context, round int) (Sample, int64, map[string]float64, error) {
	dir := filepath.Join(b.e.dir, "case-"+b.c.ID, fmt.Sprintf("kcat-zstd-r%d", round))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Sample{}, 0, nil, err
	}
	var sh []string
	for _, t := range b.ds.Topics {
		sh = append(sh, fmt.Sprintf("%s -C -b %s -q -e -o beginning -t %s -f '%%p\\t%%o\\t%%T\\t%%k\\t%%h\\t%%s\\n' | %s -3 -q -o %s",
			b.e.kcat, b.e.kafka.Bootstrap(), t.Name, b.e.zstd, filepath.Join(dir, t.Name+".zst")))
	}
	s, err := Measure(ctx, b.e.o.Wrapper, exec.CommandContext(ctx, "bash", "-c", "set -eo pipefail; "+strings.Join(sh, "; ")))
	if err != nil {
		return Sample{}, 0, nil, err
	}
	stored, err := duBytes(dir)
	os.RemoveAll(dir)
	return s, stored, nil, err
}

// kcatProduce produces the case's kcat dump (keys and values; kcat -P
// carries no headers or timestamps) into the recreated topics, lz4.
func (b *bench) kcatProduce(ctx context.Context, _ int) (Sample, int64, map[string]float64, error) {
	if err := b.e.reset(ctx, b.ds); err != nil {
		return Sample{}, 0, nil, err
	}
	if err := createTopics(ctx, b.e.adm, b.ds.Topics); err != nil {
		return Sample{}, 0, nil, err
	}
	var sh []string
	for _, t := range b.ds.Topics {
		sh = append(sh, fmt.Sprintf("%s -P -b %s -q -t %s -K '\\t' -z %s -l %s", b.e.kcat, b.e.kafka.Bootstrap(), t.Name, ProducerCompression, b.dumps[t.Name]))
	}
	s, err := Measure(ctx, b.e.o.Wrapper, exec.CommandContext(ctx, "bash", "-c", "set -eo pipefail; "+strings.Join(sh, "; ")))
	return s, 0, nil, err
}

// reset deletes the dataset's topics and group and waits (at most 2
// minutes) until the broker no longer lists the topics, so that they can be
// created again.
func (e *env) reset(ctx context.Context, ds Dataset) error {
	if _, err := e.adm.DeleteGroup(ctx, ds.AppID); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return fmt.Errorf("delete group %s: %w", ds.AppID, err)
	}
	var names []string
	for _, t := range ds.Topics {
		names = append(names, t.Name)
	}
	resp, err := e.adm.DeleteTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("delete topics %v: %w", names, err)
	}
	for _, r := range resp {
		if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("delete topic %s: %w", r.Topic, r.Err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		td, err := e.adm.ListTopics(ctx, names...)
		if err == nil {
			left := 0
			for _, d := range td {
				if d.Err == nil {
					left++
				}
			}
			if left == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topics %v still listed 2 minutes after their deletion", names)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// lastLine is the CLI's "Error: ..." line in s, else its last line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "Error: ") {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

// duBytes is the size of the files under dir.
func duBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// pushReceiver is a Pushgateway stand-in on 127.0.0.1: it keeps the phase
// durations (kafkastreams_dr_phase_duration_seconds) each job pushed.
type pushReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	phases map[string]map[string]float64
}

func newPushReceiver() *pushReceiver {
	p := &pushReceiver{phases: map[string]map[string]float64{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

func (p *pushReceiver) URL() string { return p.srv.URL }
func (p *pushReceiver) Close()      { p.srv.Close() }

// Phases returns what job pushed: phase name -> seconds.
func (p *pushReceiver) Phases(job string) map[string]float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.phases[job]
}

func (p *pushReceiver) serve(w http.ResponseWriter, r *http.Request) {
	// /metrics/job/<job>/<label>/<value>...
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/metrics/job/"), "/")
	job := parts[0]
	dec := expfmt.NewDecoder(r.Body, expfmt.ResponseFormat(r.Header))
	got := map[string]float64{}
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			break
		}
		if !strings.HasSuffix(mf.GetName(), "phase_duration_seconds") {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" {
					got[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	p.mu.Lock()
	p.phases[job] = got
	p.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}
