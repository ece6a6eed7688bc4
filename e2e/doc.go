// Package e2e holds the end-to-end tests: the kafkastreams-dr code against
// real servers (a real Apache Kafka broker, a multi-broker kfake cluster, an
// S3-compatible server) cross-checked with independent clients (kcat).
package e2e
