// Package bench is the benchmark harness behind `make bench` (issue 13,
// "Targets"): it starts one real Apache Kafka broker (and versitygw for the
// S3 case) through internal/testkit, generates realistic data with a
// franz-go producer, runs kafkastreams-dr and the kcat baselines (and OSO
// kafka-backup when KDR_OSO_KAFKA_BACKUP or $PATH names it: oso.go)
// interleaved for several rounds, measures every process from its rusage
// (wall seconds, user+sys CPU seconds, peak RSS) and renders
// docs/PERFORMANCE.md from those measurements only.
//
// The command is internal/bench/kdrbench. Performance claims belong in the
// document it writes, never in timed tests: the tests of this package
// check the arithmetic, the rusage reading and the rendering, and one
// smoke test runs the whole harness at a tiny scale.
package bench
