package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ClientOptions returns the franz-go options that connect to the cluster:
// seed brokers, client ID (default "kafkastreams-dr"), TLS and SASL.
// Callers add their own options (logger, consumer settings) after these.
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

// readFile reads path; the error is "cannot read PATH: REASON".
func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	return b, nil
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
