// Command kdrbench is `make bench`: the benchmark harness of issue 13. It
// builds bin/kafkastreams-dr, starts one real Apache Kafka broker (and
// versitygw for the S3 case) from the tools `make tools` fetched (the
// KDR_* variables of the tests), runs kafkastreams-dr and the kcat
// baselines interleaved and writes the document named by -out.
//
//	go run ./internal/bench/kdrbench -out docs/PERFORMANCE.md
//
// BENCH_CASES (comma-separated letters of a,b,c,d,e; default all),
// BENCH_ROUNDS (default 3), BENCH_MEMORY_ROUNDS (case b, default 1) and
// BENCH_SCALE (default 1: the sizes; 0.05 for a quick look) pick
// what runs, and BENCH_VARIANTS adds kafkastreams-dr variants by config
// key (bench.ParseVariants); the flags of the same names win.
// KDR_OSO_KAFKA_BACKUP names OSO kafka-backup's binary (else kafka-backup
// on $PATH, if any), measured beside ours in cases a and c (bench.FindOSO);
// without it the targets that compare with OSO say "not measured". Exit 0 with the document
// written, 1 when a run failed (nothing written), 2 for a bad setting,
// 130 when interrupted; the broker, versitygw and the temporary data are
// removed on every path.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/bench"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == bench.WrapperArg {
		// The rusage wrapper of every measured process (bench.Measure).
		os.Exit(bench.RunWrapper(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:]))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func run(args []string) int {
	fl := flag.NewFlagSet("kdrbench", flag.ContinueOnError)
	out := fl.String("out", "docs/PERFORMANCE.md", "the Markdown `FILE` to write")
	cases := fl.String("cases", envOr("BENCH_CASES", strings.Join(bench.AllCases, ",")), "the cases to run, comma-separated (BENCH_CASES)")
	rounds := fl.String("rounds", envOr("BENCH_ROUNDS", "3"), "rounds per case (BENCH_ROUNDS)")
	memRounds := fl.String("memory-rounds", envOr("BENCH_MEMORY_ROUNDS", "1"), "rounds of case b (BENCH_MEMORY_ROUNDS)")
	scale := fl.String("scale", envOr("BENCH_SCALE", "1"), "data size factor, 1 for the issue's sizes (BENCH_SCALE)")
	manyParts := fl.Int("many-partitions", 2000, "partitions of cases c and d")
	offsetParts := fl.Int("offset-partitions", 1000, "partitions of case e")
	bin := fl.String("bin", "", "a built kafkastreams-dr (default: go build bin/kafkastreams-dr)")
	s3Case := fl.String("s3-case", envOr("BENCH_S3_CASE", "c"), "the case whose data case d backs up to S3: a or c (BENCH_S3_CASE)")
	noProfile := fl.Bool("no-profile", false, "skip the CPU profiles")
	variants := fl.String("variants", os.Getenv("BENCH_VARIANTS"), "more kafkastreams-dr variants: NAME:backup.KEY=VALUE[,...] separated by ; (BENCH_VARIANTS)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kdrbench: find my own path for the rusage wrapper:", err)
		return 1
	}
	o := bench.Options{Binary: *bin, Wrapper: self, S3Case: *s3Case, ManyPartitions: *manyParts, OffsetPartitions: *offsetParts, Profile: !*noProfile, Log: os.Stderr}
	o.OSO, err = bench.FindOSO(context.Background(), os.Getenv(bench.OSOEnv))
	if err == nil {
		o.Rounds, err = positiveInt("BENCH_ROUNDS", *rounds)
	}
	if err == nil {
		o.MemoryRounds, err = positiveInt("BENCH_MEMORY_ROUNDS", *memRounds)
	}
	if err == nil {
		o.Scale, err = strconv.ParseFloat(*scale, 64)
		if err != nil || o.Scale <= 0 {
			err = fmt.Errorf("BENCH_SCALE=%q: want a number above 0, e.g. 1 or 0.05", *scale)
		}
	}
	if err == nil {
		var more []bench.Variant
		more, err = bench.ParseVariants(*variants)
		bench.Variants = append(bench.Variants, more...)
	}
	for _, c := range strings.Split(*cases, ",") {
		if c = strings.TrimSpace(c); c != "" {
			o.Cases = append(o.Cases, c)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kdrbench:", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kdrbench:", err)
		if ctx.Err() != nil {
			return 130
		}
		return 1
	}
	rep.Command = commandLine(o, *variants, *out)
	if err := writeFile(*out, rep.Markdown()); err != nil {
		fmt.Fprintln(os.Stderr, "kdrbench:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "kdrbench: wrote %s\n", *out)
	return 0
}

func positiveInt(name, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a whole number of at least 1", name, s)
	}
	return n, nil
}

// commandLine is the command the document names: the settings as the
// BENCH_* variables, then the program.
func commandLine(o bench.Options, variants, out string) string {
	env := fmt.Sprintf("BENCH_CASES=%s BENCH_ROUNDS=%d BENCH_MEMORY_ROUNDS=%d BENCH_SCALE=%g BENCH_S3_CASE=%s",
		strings.Join(o.Cases, ","), o.Rounds, o.MemoryRounds, o.Scale, o.S3Case)
	if variants != "" {
		env += fmt.Sprintf(" BENCH_VARIANTS='%s'", variants)
	}
	if o.OSO != "" && os.Getenv(bench.OSOEnv) != "" {
		// Not the machine's path: where the binary is built is the reader's.
		env = bench.OSOEnv + "=.../" + filepath.Base(o.OSO) + " " + env
	}
	return env + " go run ./internal/bench/kdrbench -out " + out
}

// writeFile writes the document through a temporary file and a rename,
// so that an interrupted run leaves the old one whole.
func writeFile(path, text string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".kdrbench-*.md")
	if err != nil {
		return err
	}
	_, werr := tmp.WriteString(text)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
