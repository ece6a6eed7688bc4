package config

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Reach waits until the cluster of cl answers a Metadata request (for no
// topics: its brokers only). Every command calls it right after
// kgo.NewClient on the options of ClientOptions, as its first contact with
// a cluster, so that every command survives a cluster that is restarting
// when it starts, and fails the same way when the cluster stays away.
//
// It asks again, with RetryBackoff between tries, while the cluster fails
// retriably: a refused, reset or timed-out connection (franz-go's "unable
// to dial"), a request that timed out (request_timeout), a connection
// closed mid-request, or a retriable Kafka error code. franz-go does not
// retry a refused connection to the only seed broker (it fails fast
// "so that a typo'd address is found", kgo's isRetryableBrokerErr) and
// stops retrying timeouts up to one backoff before its RetryTimeout; this
// loop is what makes retry_timeout the bound.
//
// The bound: with request (kgo.RequestTimeoutOverhead) and budget
// (kgo.RetryTimeout) of cl, an unreachable cluster fails no earlier than
// budget after the call and no later than budget + request. A permanent
// error (an unknown host, a TLS or SASL failure) ends the wait at once;
// a TLS or SASL failure (a broker certificate not trusted, a client
// certificate refused by a TLS alert, SASL credentials or mechanism
// refused) is "NAME SEEDS refused the connection (1 try): ERR; HINT",
// the hint naming the keys to fix (e.g. source.security.tls.ca_file);
// ctx ending ends it with ctx's error, wrapped. The error is what names the cluster: "NAME SEEDS did not answer
// for DURATION (retry_timeout ...)" with the last error wrapped, e.g.
// "source cluster 10.0.0.7:9092 did not answer for 2m0s (retry_timeout
// 2m0s, 14 tries): unable to dial: dial tcp 10.0.0.7:9092: connect:
// connection refused".
func Reach(ctx context.Context, cl *kgo.Client, name string) error {
	request, _ := cl.OptValue(kgo.RequestTimeoutOverhead).(time.Duration)
	budget, _ := cl.OptValue(kgo.RetryTimeout).(time.Duration)
	seeds, _ := cl.OptValue(kgo.SeedBrokers).([]string)
	start := time.Now()
	// franz-go counts its own RetryTimeout from each call: a call started
	// just before the budget ends would retry for another whole budget.
	deadline := start.Add(budget + request)
	var last error
	for tries := 1; ; tries++ {
		tctx, cancel := context.WithDeadline(ctx, deadline)
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		_, err := req.RequestWith(tctx, cl)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return stopped(ctx, name, seeds, tries, err)
		}
		if last == nil || !errors.Is(err, context.DeadlineExceeded) {
			last = err // our deadline ending a try says less than the try before
		}
		waited := time.Since(start)
		if hint := authHint(err, name, cl); hint != "" {
			return fmt.Errorf("%s %s refused the connection (%d %s): %w; %s",
				name, strings.Join(seeds, ","), tries, triesWord(tries), err, hint)
		}
		var eof *kgo.ErrFirstReadEOF
		if errors.As(err, &eof) {
			return fmt.Errorf("%s %s closed the connection at the first request (%d %s): %w; %s",
				name, strings.Join(seeds, ","), tries, triesWord(tries), err, firstReadEOFHint(name, cl))
		}
		if notKafka(err) {
			fix := fmt.Sprintf("check that %s names the brokers' Kafka listeners (host:port)", clusterKey(name, "bootstrap_servers"))
			if strings.Contains(err.Error(), "tls alert record") {
				fix = fmt.Sprintf("the listener speaks TLS: set %s: true", clusterKey(name, "security.tls.enabled"))
			}
			return fmt.Errorf("%s %s answered, but not in the Kafka protocol (%d %s): %w; %s",
				name, strings.Join(seeds, ","), tries, triesWord(tries), err, fix)
		}
		if !reachRetriable(err) || waited >= budget {
			err := fmt.Errorf("%s %s did not answer for %s (retry_timeout %s, %d %s): %w",
				name, strings.Join(seeds, ","), waited.Round(time.Millisecond), budget, tries, triesWord(tries), last)
			if hint := silentHint(last, name); hint != "" {
				err = fmt.Errorf("%w; %s", err, hint)
			}
			return err
		}
		t := time.NewTimer(min(RetryBackoff(tries), budget-waited))
		select {
		case <-ctx.Done():
			t.Stop()
			return stopped(ctx, name, seeds, tries, last)
		case <-t.C:
		}
	}
}

// stopped is Reach's error when ctx ends first: ctx's error (so that a
// cancelled run stays cancelled), naming the cluster and its last error.
func stopped(ctx context.Context, name string, seeds []string, tries int, last error) error {
	return fmt.Errorf("%s %s: %w (%d %s; last: %v)", name, strings.Join(seeds, ","), context.Cause(ctx), tries, triesWord(tries), last)
}

// silentHint is the fix for a cluster that did not answer, when its last
// error says more than the silence: a host name that does not resolve, a
// listener that accepted the connection and never answered a Kafka
// request (another service's port that waits for its own protocol, or a
// broker slower than request_timeout); "" otherwise (a refused or timed-out
// connection attempt names itself).
func silentHint(last error, name string) string {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(last, &dns):
		return fmt.Sprintf("the host name %s does not resolve (DNS): check %s", dns.Name, clusterKey(name, "bootstrap_servers"))
	case errors.As(last, &op) && op.Op == "dial":
		return ""
	case errors.Is(last, context.DeadlineExceeded), errors.Is(last, os.ErrDeadlineExceeded):
		return fmt.Sprintf("a listener accepted the connection but did not answer a Kafka request within %s: check that %s names the brokers' Kafka listeners (not another service's port), or raise %s",
			clusterKey(name, "request_timeout"), clusterKey(name, "bootstrap_servers"), clusterKey(name, "request_timeout"))
	}
	return ""
}

// firstReadEOFHint is the fix for a listener that closed the connection
// at the client's first request, which a Kafka listener does to a client
// without the TLS or the SASL it requires: the keys this client has not
// set, of security.tls.enabled and security.sasl.mechanism.
func firstReadEOFHint(name string, cl *kgo.Client) string {
	var fixes []string
	if cfg, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config); cfg == nil {
		fixes = append(fixes, fmt.Sprintf("if the listener requires TLS, set %s: true", clusterKey(name, "security.tls.enabled")))
	}
	if ms, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism); len(ms) == 0 {
		fixes = append(fixes, fmt.Sprintf("if it requires SASL, set %s and its credentials", clusterKey(name, "security.sasl.mechanism")))
	}
	if len(fixes) == 0 {
		return "check the listener's security.protocol against this client's security settings, and the broker's log"
	}
	return strings.Join(fixes, "; ")
}

// notKafka reports whether err is franz-go refusing an answer whose
// 4-byte size prefix no Kafka broker sends (negative, or above
// kgo.BrokerMaxReadBytes: an HTTP server's "HTTP", a TLS alert to a
// plaintext client): the port speaks another protocol, and asking again
// gets the same answer. franz-go words these errors without a type
// (kgo's brokerCxn.parseReadSize), hence the match on its text.
func notKafka(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "invalid large response size") || strings.Contains(msg, "invalid negative response size")
}

// clusterKey is the config key k under the cluster's prefix: "source" for
// "source cluster", "target" for "target cluster"; k alone for init's
// "cluster", which has no config keys yet.
func clusterKey(name, k string) string {
	p := strings.TrimSuffix(name, " cluster")
	if p == name || strings.Contains(p, " ") {
		return k
	}
	return p + "." + k
}

// reachRetriable reports whether a failed Metadata request is worth asking
// again: a transient network failure, a timeout, or a retriable Kafka error
// code.
func reachRetriable(err error) bool {
	return Transient(err) || errors.Is(err, context.DeadlineExceeded) || kerr.IsRetriable(err)
}

// authHint says which setting to fix when err is a TLS or SASL failure
// (a broker certificate not trusted, a client certificate refused, SASL
// credentials or a mechanism refused), naming the keys under the
// cluster's prefix ("source" for "source cluster", "target" for "target
// cluster"); "" for any other error.
func authHint(err error, name string, cl *kgo.Client) string {
	key := func(k string) string { return clusterKey(name, k) }
	mech := "SASL"
	if ms, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism); len(ms) > 0 {
		mech = ms[0].Name()
	}
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Sprintf("the broker refused the %s credentials: check %s and %s (or %s), and that the user has %s credentials on the cluster (%s)",
			mech, key("security.sasl.username"), key("security.sasl.password"), key("security.sasl.password_file"), mech, key("security.sasl.mechanism"))
	case errors.Is(err, kerr.IllegalSaslState):
		// Kafka answers a SaslHandshake on a listener without SASL
		// (PLAINTEXT, SSL) with ILLEGAL_SASL_STATE (KafkaApis
		// handleSaslHandshakeRequest).
		return fmt.Sprintf("the broker's listener does not use SASL: remove %s, or dial the brokers' SASL listener (SASL_PLAINTEXT or SASL_SSL) in %s",
			key("security.sasl"), key("bootstrap_servers"))
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return fmt.Sprintf("the broker's listener does not enable SASL mechanism %s: set %s to one of the listener's sasl.enabled.mechanisms (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)",
			mech, key("security.sasl.mechanism"))
	case errors.As(err, new(tls.RecordHeaderError)):
		return fmt.Sprintf("the listener does not speak TLS: remove %s (or set enabled: false), or dial the brokers' TLS listener (SSL or SASL_SSL) in %s",
			key("security.tls"), key("bootstrap_servers"))
	case errors.As(err, &unknownCA):
		return fmt.Sprintf("the broker's certificate is not signed by a CA this client trusts: set %s to the PEM certificate of the CA that signed it", key("security.tls.ca_file"))
	case errors.As(err, &hostErr):
		return fmt.Sprintf("the broker's certificate is not for the host dialled: set %s to a name the certificate holds, or dial that name in %s", key("security.tls.server_name"), key("bootstrap_servers"))
	case errors.As(err, &invalid):
		return fmt.Sprintf("the broker's certificate is not valid (expired, or not for a server): renew it, or check %s", key("security.tls.ca_file"))
	case isClientCertAlert(err):
		return fmt.Sprintf("the broker refused this client's certificate (its listener requires mutual TLS: ssl.client.auth=required): set %s and %s to a PEM certificate and key signed by a CA the broker trusts",
			key("security.tls.cert_file"), key("security.tls.key_file"))
	}
	return ""
}

// isClientCertAlert reports whether err is a TLS alert from the broker
// refusing the client's certificate or its absence. crypto/tls returns a
// received alert as a *net.OpError with Op "remote error" (the alert type
// is unexported: tls.AlertError is for QUIC only): bad_certificate,
// unsupported_certificate, certificate_revoked, certificate_expired,
// certificate_unknown, unknown_ca, access_denied, certificate_required.
func isClientCertAlert(err error) bool {
	if !isRemoteTLSAlert(err) {
		return false
	}
	msg := err.Error()
	for _, a := range []string{"bad certificate", "unsupported certificate", "revoked certificate", "expired certificate",
		"unknown certificate", "unknown certificate authority", "access denied", "certificate required"} {
		if strings.Contains(msg, "tls: "+a) {
			return true
		}
	}
	return false
}

// isRemoteTLSAlert reports whether err holds a TLS alert the broker sent.
func isRemoteTLSAlert(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}

// Transient reports whether err is a network failure that a broker
// restart causes and that a retry can outlast: a refused, reset or
// timed-out connection (franz-go's "unable to dial", which franz-go itself
// retries only on another broker: kgo's isRetryableBrokerErr), a request
// that timed out or whose connection closed (kgo.IsRetryableBrokerErr).
// An unknown host is not transient. Kafka error codes are kerr.IsRetriable's.
func Transient(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return false
	}
	// A TLS alert from the broker (crypto/tls wraps it in a *net.OpError
	// "remote error") refuses this client; retrying gets the same alert.
	if isRemoteTLSAlert(err) {
		return false
	}
	var op *net.OpError
	return kgo.IsRetryableBrokerErr(err) || errors.As(err, &op)
}

// Retriable reports whether a failed Kafka request that is safe to
// repeat is worth asking again within a retry budget: a Kafka error code
// kerr marks retriable; UNKNOWN_SERVER_ERROR (an unexpected broker-side
// failure: kerr marks it non-retriable, and one of them failed a whole
// backup or restore, issue 14); a dropped, refused or reset connection
// (Transient); franz-go's ErrFirstReadEOF (a connection closed at its
// first request, which franz-go words as missing SASL: a persistent one
// still fails, after the budget). Callers add their own exceptions (the
// backup's unknown topics are missing, not transient) and never pass a
// Produce error (franz-go's producer fails the batch; the restore resumes
// when run again).
func Retriable(err error) bool {
	var eof *kgo.ErrFirstReadEOF
	return kerr.IsRetriable(err) || errors.Is(err, kerr.UnknownServerError) || Transient(err) || errors.As(err, &eof)
}

func triesWord(n int) string {
	if n == 1 {
		return "try"
	}
	return "tries"
}
