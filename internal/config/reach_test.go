package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReach: Reach returns once any seed answers, and otherwise fails
// after retry_timeout naming every seed and the number of tries.
func TestReach(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()

	tests := []struct {
		name  string
		seeds []string
		want  string // "" for success; else in the error
	}{
		{"one seed of two refuses", []string{refused, c.ListenAddrs()[0]}, ""},
		{"every seed refuses", []string{refused}, "source cluster " + refused + " did not answer for 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := reach(t, Cluster{BootstrapServers: tt.seeds, RequestTimeout: time.Second, RetryTimeout: time.Second}, "source cluster")
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Reach: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "connection refused")):
				t.Fatalf("Reach: %v; want an error containing %q and the refusal", err, tt.want)
			}
		})
	}
}

// TestReachRefusedClientCertificateIsPermanent: a broker whose listener
// requires a client certificate answers a client without one with a TLS
// alert (certificate_required, crypto/tls's "remote error"); Reach used to
// retry it as a network failure for the whole retry_timeout and then say
// the cluster "did not answer". It is refused at the first try, naming
// the keys to set. The server is crypto/tls with RequireAnyClientCert.
func TestReachRefusedClientCertificateIsPermanent(t *testing.T) {
	ln := tlsListener(t, tls.RequireAnyClientCert)
	accepted := 0
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted++
			mu.Unlock()
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).HandshakeContext(t.Context())
			}()
		}
	}()

	err := reach(t, Cluster{BootstrapServers: []string{ln.Addr().String()}, RequestTimeout: 5 * time.Second, RetryTimeout: time.Minute,
		Security: Security{TLS: TLS{Enabled: true, InsecureSkipVerify: true}}}, "source cluster")
	if err == nil {
		t.Fatal("Reach succeeded against a listener that requires a client certificate")
	}
	for _, want := range []string{"refused the connection (1 try)", "tls: certificate required", "refused this client's certificate",
		"source.security.tls.cert_file", "source.security.tls.key_file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Reach: %v\nwant it to contain %q", err, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if accepted == 0 {
		t.Error("the TLS server accepted no connection: the test shows nothing")
	}
}

// tlsListener is a crypto/tls listener on 127.0.0.1 with a self-signed
// certificate for that address, closed with the test.
func tlsListener(t *testing.T, clientAuth tls.ClientAuthType) net.Listener {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		ClientAuth:   clientAuth,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// TestReachOfATLSListenerWithoutTLS: a TLS listener closes the
// connection of a plaintext client at its first request (crypto/tls
// drops a record that is not TLS without an alert, as Kafka's SASL_SSL
// listener drops a client without SASL: TestSecurityOnKafka; franz-go's
// ErrFirstReadEOF). Reach said the cluster "did not answer"; it says the
// connection was closed and names the key that turns TLS on, at the first
// try.
func TestReachOfATLSListenerWithoutTLS(t *testing.T) {
	ln := tlsListener(t, tls.NoClientCert)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).HandshakeContext(t.Context())
			}()
		}
	}()
	err := reach(t, Cluster{BootstrapServers: []string{ln.Addr().String()}, RequestTimeout: time.Second, RetryTimeout: 10 * time.Second}, "target cluster")
	if err == nil {
		t.Fatal("Reach of a TLS listener without TLS: no error")
	}
	for _, want := range []string{"target cluster " + ln.Addr().String() + " closed the connection at the first request (1 try)", "set target.security.tls.enabled: true", "target.security.sasl.mechanism"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Reach: %v\nwant it to contain %q", err, want)
		}
	}
}

// TestReachOfAPortAnsweringHTTP: a seed whose port answers in another
// protocol (an HTTP server answering the Kafka request it cannot parse
// with 400 Bad Request, as fasthttp-based servers such as versitygw do:
// franz-go reads "HTTP" as a 1.2 GB response size) is a wrong port, not a
// silent cluster. Reach said the cluster "did not answer" after "1
// tries"; it names the answer and the key to fix, and stops at the first
// try (retrying gets the same answer).
func TestReachOfAPortAnsweringHTTP(t *testing.T) {
	seed := answeringListener(t, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	start := time.Now()
	err := reach(t, Cluster{BootstrapServers: []string{seed}, RequestTimeout: time.Second, RetryTimeout: 10 * time.Second}, "source cluster")
	if err == nil {
		t.Fatal("Reach of an HTTP server: no error")
	}
	msg := err.Error()
	for _, want := range []string{"source cluster " + seed + " answered, but not in the Kafka protocol", "1 try)", "source.bootstrap_servers"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Reach: %v\nwant it to contain %q", err, want)
		}
	}
	if strings.Contains(msg, "did not answer") || strings.Contains(msg, "1 tries") {
		t.Errorf("Reach: %v\nwant neither \"did not answer\" nor \"1 tries\"", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Reach took %s: want it to stop at the first answer", d)
	}
}

// reach is Reach's error for a client of cluster c, named name.
func reach(t *testing.T, c Cluster, name string) error {
	t.Helper()
	opts, err := c.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	return Reach(t.Context(), cl, name)
}

// TestReachNamesWhatTheListenerSpeaks: answers a new user met that Reach
// reported without their cause (new-user pass of issue 14; SASL against a
// listener without SASL, which Kafka answers with ILLEGAL_SASL_STATE, is a
// case of TestSecurityOnKafka):
//   - TLS against a listener that is not TLS (an HTTP server's answer):
//     crypto/tls's "first record does not look like a TLS handshake";
//   - a port that accepts the connection and never answers (an HTTP server
//     waiting for its request line): "context deadline exceeded" alone;
//   - a host name that does not resolve (.invalid, RFC 2606).
func TestReachNamesWhatTheListenerSpeaks(t *testing.T) {
	http400 := answeringListener(t, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	silent := answeringListener(t, "")
	for _, tc := range []struct {
		name string
		c    Cluster
		want []string
	}{
		{"TLS against a listener that is not TLS", Cluster{BootstrapServers: []string{http400}, Security: Security{TLS: TLS{Enabled: true}}},
			[]string{"does not look like a TLS handshake", "does not speak TLS: remove source.security.tls", "(1 try)"}},
		{"a port that never answers", Cluster{BootstrapServers: []string{silent}, RequestTimeout: 500 * time.Millisecond},
			[]string{"did not answer", "accepted the connection but did not answer a Kafka request within source.request_timeout", "source.bootstrap_servers"}},
		{"a host name that does not resolve", Cluster{BootstrapServers: []string{"broker.kafkastreams-dr.invalid:9092"}},
			[]string{"the host name broker.kafkastreams-dr.invalid does not resolve (DNS): check source.bootstrap_servers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.RetryTimeout = time.Second
			if tc.c.RequestTimeout == 0 {
				tc.c.RequestTimeout = 2 * time.Second
			}
			err := reach(t, tc.c, "source cluster")
			if err == nil {
				t.Fatal("Reach: no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Reach: %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

// answeringListener is a TCP listener on 127.0.0.1 that answers the first
// bytes of every connection with answer, then closes it; with answer ""
// it reads and never answers (an HTTP server waiting for a request line).
func answeringListener(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 512)
				if _, err := c.Read(buf); err == nil && answer != "" {
					_, _ = io.WriteString(c, answer)
					return
				}
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String()
}
