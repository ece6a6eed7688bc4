package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
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
// It reads the TLS files and the SASL password file now; an unreadable or
// malformed file is an error naming the file. The password file's content
// is used as is, except for one trailing newline.
func (c Cluster) ClientOptions() ([]kgo.Opt, error) {
	if len(c.BootstrapServers) == 0 {
		return nil, fmt.Errorf("no bootstrap servers")
	}
	id := c.ClientID
	if id == "" {
		id = DefaultClientID
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.BootstrapServers...), kgo.ClientID(id)}

	if t := c.Security.TLS; t.Enabled {
		cfg, err := t.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if s := c.Security.SASL; s.Enabled() {
		m, err := s.mechanism()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

func (t TLS) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName, // empty: franz-go uses each broker's host name
		InsecureSkipVerify: t.InsecureSkipVerify,
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read TLS CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS CA file %s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load TLS client certificate %s and key %s: %w", t.CertFile, t.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func (s SASL) mechanism() (sasl.Mechanism, error) {
	pass := s.Password
	if s.PasswordFile != "" {
		b, err := os.ReadFile(s.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("read SASL password file: %w", err)
		}
		pass = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if pass == "" {
			return nil, fmt.Errorf("SASL password file %s is empty", s.PasswordFile)
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
