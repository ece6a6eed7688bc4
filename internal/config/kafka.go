package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ClientOptions returns the franz-go options that connect to the cluster:
// seed brokers, client ID (default "kafkastreams-dr"), TLS, SASL, and the
// timeouts every client of the tool gets (backup, restore, verify, drill,
// topics, estimate, state), so that no Kafka call can hang:
//
//   - RequestTimeout (default 30s): kgo.RequestTimeoutOverhead (a request's
//     own timeout field, e.g. Fetch max wait, is added on top),
//     kgo.ProduceRequestTimeout (the Produce acks timeout, Kafka's
//     request.timeout.ms), and kgo.DialTimeout of at most 10s (Kafka's
//     socket.connection.setup.timeout.ms).
//   - RetryTimeout (default 2m): kgo.RetryTimeout for every retried
//     request (metadata, ListOffsets, FindCoordinator, OffsetFetch,
//     OffsetCommit, admin requests), with kgo.RequestRetries unbounded so
//     that time, not a count, decides; and backoff between tries of 250ms
//     doubling to 5s with jitter (kgo.RetryBackoffFn, Kafka's
//     retry.backoff.ms and retry.backoff.max.ms, KIP-580).
//
// kgo.RecordDeliveryTimeout is deliberately not set: franz-go measures it
// from each record's Timestamp, and a restore produces records with their
// original (past) timestamps, so every one of them would time out at once.
// Produce retries are bounded by time in the restorer instead: each chunk
// of records has a deadline of RetryTimeout + RequestTimeout
// (restorer.Options.RetryTimeout).
//
// A zero timeout takes its default. Callers add their own options (logger,
// consumer settings) after these.
//
// It reads the TLS files and the SASL password file now; every unreadable
// or malformed file is reported (errors.Join), each naming the file. The
// password file's content is used as is, except for one trailing newline.
func (c Cluster) ClientOptions() ([]kgo.Opt, error) {
	if len(c.BootstrapServers) == 0 {
		return nil, fmt.Errorf("no bootstrap servers")
	}
	id := c.ClientID
	if id == "" {
		id = DefaultClientID
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.BootstrapServers...), kgo.ClientID(id)}
	opts = append(opts, c.timeoutOptions()...)

	var errs []error
	if t := c.Security.TLS; t.Enabled {
		cfg, err := t.tlsConfig()
		if err != nil {
			errs = append(errs, err)
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if s := c.Security.SASL; s.Enabled() {
		m, err := s.mechanism()
		if err != nil {
			errs = append(errs, err)
		}
		opts = append(opts, kgo.SASL(m))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return opts, nil
}

// maxDialTimeout caps the connection timeout: Kafka's
// socket.connection.setup.timeout.ms default.
const maxDialTimeout = 10 * time.Second

// Timeouts returns the cluster's request and retry timeouts with their
// defaults applied (a Cluster built in code may leave them zero).
func (c Cluster) Timeouts() (request, retry time.Duration) {
	request, retry = c.RequestTimeout, c.RetryTimeout
	if request <= 0 {
		request = DefaultRequestTimeout
	}
	if retry <= 0 {
		retry = DefaultRetryTimeout
	}
	return request, retry
}

func (c Cluster) timeoutOptions() []kgo.Opt {
	request, retry := c.Timeouts()
	return []kgo.Opt{
		kgo.RequestTimeoutOverhead(request),
		kgo.DialTimeout(min(request, maxDialTimeout)),
		kgo.RetryTimeout(retry),
		kgo.RequestRetries(math.MaxInt32), // RetryTimeout decides
		kgo.RetryBackoffFn(RetryBackoff),
		kgo.ProduceRequestTimeout(request),
	}
}

// RetryBackoff is the wait before retry number attempt (1, 2, ...): 250ms
// doubling to at most 5s, less up to 20% jitter (Kafka's retry.backoff.ms
// and retry.backoff.max.ms, KIP-580; franz-go's default range).
func RetryBackoff(attempt int) time.Duration {
	d := 5 * time.Second
	if attempt < 6 {
		d = 250 * time.Millisecond << max(attempt-1, 0)
	}
	return d - time.Duration(rand.Int64N(int64(d)/5))
}

// tlsConfig builds the TLS configuration, reading every file it names; the
// error joins one error per bad file.
func (t TLS) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName, // empty: franz-go uses each broker's host name
		InsecureSkipVerify: t.InsecureSkipVerify,
	}
	var errs []error
	if t.CAFile != "" {
		pool, err := readCAFile(t.CAFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("TLS CA file: %w", err))
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, certErr, keyErr, pairErr := loadKeyPair(t.CertFile, t.KeyFile)
		for _, e := range []struct {
			what string
			err  error
		}{{"TLS client certificate", certErr}, {"TLS client key", keyErr}, {"TLS client certificate and key", pairErr}} {
			if e.err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", e.what, e.err))
			}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, errors.Join(errs...)
}

func (s SASL) mechanism() (sasl.Mechanism, error) {
	pass := s.Password
	if s.PasswordFile != "" {
		var err error
		if pass, err = readPasswordFile(s.PasswordFile); err != nil {
			return nil, fmt.Errorf("SASL password file: %w", err)
		}
	}
	switch strings.ToUpper(s.Mechanism) {
	case MechanismPlain:
		return plain.Auth{User: s.Username, Pass: pass}.AsMechanism(), nil
	case MechanismScramSHA256:
		return scram.Auth{User: s.Username, Pass: pass}.AsSha256Mechanism(), nil
	case MechanismScramSHA512:
		return scram.Auth{User: s.Username, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("SASL mechanism %q is not supported (want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", s.Mechanism)
}

// The file readers below return errors that start with what is wrong and
// name the file, e.g. "cannot read /etc/kafka/ca.pem: permission denied";
// callers prefix the setting (a key path, or "TLS CA file").

// readFile reads path, a regular file of at most MaxFileBytes (see
// readLimited); the error is "cannot read PATH: REASON" or names what the
// file is instead.
func readFile(path string) ([]byte, error) {
	return readLimited(path)
}

// readCAFile reads a PEM bundle of CA certificates.
func readCAFile(path string) (*x509.CertPool, error) {
	pem, err := readFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// loadKeyPair reads a PEM client certificate and its key. certErr and
// keyErr are the read errors of each file; pairErr, set only when both were
// read, says they do not form a certificate and matching key.
func loadKeyPair(certFile, keyFile string) (cert tls.Certificate, certErr, keyErr, pairErr error) {
	if certFile == "" || keyFile == "" {
		return cert, nil, nil, errors.New("cert_file and key_file go together")
	}
	certPEM, certErr := readFile(certFile)
	keyPEM, keyErr := readFile(keyFile)
	if certErr != nil || keyErr != nil {
		return cert, certErr, keyErr, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		pairErr = fmt.Errorf("%s and %s are not a PEM certificate and its key: %w", certFile, keyFile, err)
	}
	return cert, nil, nil, pairErr
}

// readPasswordFile reads a password, dropping one trailing newline (\n or
// \r\n). An empty password is an error.
func readPasswordFile(path string) (string, error) {
	b, err := readFile(path)
	if err != nil {
		return "", err
	}
	pass := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if pass == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return pass, nil
}
