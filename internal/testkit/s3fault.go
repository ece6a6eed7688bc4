package testkit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FaultAction is what an S3Proxy does to a request matching a Fault.
type FaultAction int

const (
	// FaultStatus500 answers HTTP 500 InternalError without forwarding.
	FaultStatus500 FaultAction = iota + 1
	// FaultReset resets the TCP connection (RST) before any response.
	FaultReset
	// FaultTruncate forwards the request, sends the upstream's status and
	// headers (the full Content-Length) and half of the body (none of a
	// resumed, Range, download), then closes the connection: a download cut
	// short.
	FaultTruncate
	// FaultResetMidBody is FaultTruncate ending with a TCP reset instead
	// of a clean close.
	FaultResetMidBody
	// FaultStallBody sends the status, headers and half of the body, then
	// sends nothing more until the client gives up or the test ends.
	FaultStallBody
	// FaultHang reads the request and never answers.
	FaultHang
	// FaultLoseResponse forwards the request (the server acts on it), then
	// resets the connection instead of sending the response: a write whose
	// success the client never learns.
	FaultLoseResponse
	// FaultDelayForward holds the request for the rule's Delay, then
	// forwards it whether or not the client still waits (an S3 server
	// that acts on a request its client has already given up on), and
	// answers if the client is still there.
	FaultDelayForward
	// FaultFlipByte forwards the request and the whole response, with the
	// byte in the middle of the body inverted: a corruption in transit
	// (the stored object is intact, its checksum header is sent as stored).
	FaultFlipByte
	// FaultSlowDown answers HTTP 503 SlowDown without forwarding: S3's
	// request-rate throttling ("Please reduce your request rate").
	FaultSlowDown
)

func (a FaultAction) String() string {
	switch a {
	case FaultStatus500:
		return "500"
	case FaultReset:
		return "reset"
	case FaultTruncate:
		return "truncate"
	case FaultResetMidBody:
		return "reset-mid-body"
	case FaultStallBody:
		return "stall-body"
	case FaultHang:
		return "hang"
	case FaultLoseResponse:
		return "lose-response"
	case FaultDelayForward:
		return "delay-forward"
	case FaultFlipByte:
		return "flip-byte"
	case FaultSlowDown:
		return "503-slowdown"
	}
	return "fault(" + strconv.Itoa(int(a)) + ")"
}

// Fault is one rule of an S3Proxy: requests with Method (any when "")
// whose URL path contains PathContains (any when ""), whose query contains
// QueryContains (any when "") and that carry no
// Range header unless Ranged is set get Action, the first Times of them
// (every one when Times is 0) after the first Skip, each with probability
// Rate (always when 0).
type Fault struct {
	Method       string
	PathContains string
	// QueryContains (any when "") matches the raw query: "partNumber=2"
	// is UploadPart of a multipart upload's second part, "uploads" its
	// CreateMultipartUpload, "uploadId" (with Method POST) its
	// CompleteMultipartUpload.
	QueryContains string
	Ranged        bool // also match requests with a Range header (resumed downloads)
	Action        FaultAction
	Times         int
	Skip          int // matching requests let through before the rule applies
	Rate          float64
	Delay         time.Duration // FaultDelayForward: how long the request is held
}

// S3Proxy is a loopback reverse proxy in front of an S3 server that injects
// faults (HTTP 500, connection resets, bodies cut short or stalled, no
// answer) into matching requests and forwards the others unchanged,
// keeping the Host header so that SigV4 signatures stay valid. Create it
// with StartS3Proxy; use Endpoint in place of the server's endpoint.
type S3Proxy struct {
	Endpoint string // base URL of the proxy, http://127.0.0.1:<port>

	upstream string
	client   *http.Client
	mu       sync.Mutex
	faults   []*faultRule
	rnd      *rand.Rand
	log      []string // "<action> <method> <path>" of every injected fault
	seen     []S3Request
	done     chan struct{}
}

// S3Request is one request an S3Proxy received: what the client sent (its
// headers as they were on the wire) and what the upstream answered.
type S3Request struct {
	Method string
	Path   string // URL path: /<bucket>/<key>
	Query  string // raw query: "uploads" for CreateMultipartUpload, "partNumber=1&uploadId=..." for UploadPart
	Header http.Header
	// Status is the upstream's HTTP status (0 when the proxy answered
	// itself or got none), and RespHeader its response headers.
	Status     int
	RespHeader http.Header
}

// Requests returns every request received so far, in arrival order.
func (p *S3Proxy) Requests() []S3Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]S3Request(nil), p.seen...)
}

// record adds one request to Requests and returns its index.
func (p *S3Proxy) record(r *http.Request) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, S3Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone()})
	return len(p.seen) - 1
}

// answered records the upstream's answer to request i.
func (p *S3Proxy) answered(i int, resp *http.Response) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[i].Status, p.seen[i].RespHeader = resp.StatusCode, resp.Header.Clone()
}

type faultRule struct {
	Fault
	used, skipped int
}

// StartS3Proxy starts a fault-injecting proxy on a free loopback port in
// front of the S3 server at upstream (a base URL). t.Cleanup stops it and
// releases every stalled connection. Random faults (Rate) use a fixed
// seed, so a test sees the same sequence on every run.
func StartS3Proxy(t *testing.T, upstream string) *S3Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen for the S3 fault proxy: %v", err)
	}
	p := &S3Proxy{
		Endpoint: "http://" + l.Addr().String(),
		upstream: strings.TrimSuffix(upstream, "/"),
		client:   &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: time.Minute},
		rnd:      rand.New(rand.NewPCG(1, 2)),
		done:     make(chan struct{}),
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() {
		close(p.done)
		srv.Close()
	})
	return p
}

// Fault adds a rule; rules are tried in the order they were added and the
// first that matches (and still has Times left) applies.
func (p *S3Proxy) Fault(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, &faultRule{Fault: f})
}

// Clear removes every rule.
func (p *S3Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = nil
}

// Injected returns one line per fault injected so far: "<action> <method>
// <path>[?<query>]".
func (p *S3Proxy) Injected() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

func (p *S3Proxy) match(r *http.Request) (FaultAction, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.faults {
		switch {
		case f.Method != "" && f.Method != r.Method,
			f.PathContains != "" && !strings.Contains(r.URL.Path, f.PathContains),
			f.QueryContains != "" && !strings.Contains(r.URL.RawQuery, f.QueryContains),
			!f.Ranged && r.Header.Get("Range") != "",
			f.Times > 0 && f.used >= f.Times:
			continue
		}
		if f.skipped < f.Skip {
			f.skipped++
			return 0, 0
		}
		if f.Rate > 0 && p.rnd.Float64() >= f.Rate {
			continue
		}
		f.used++
		where := r.URL.Path
		if r.URL.RawQuery != "" {
			where += "?" + r.URL.RawQuery
		}
		p.log = append(p.log, fmt.Sprintf("%s %s %s", f.Action, r.Method, where))
		return f.Action, f.Delay
	}
	return 0, 0
}

func (p *S3Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seen := p.record(r)
	action, delay := p.match(r)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	ctx := r.Context()
	switch action {
	case FaultStatus500:
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected by the test's fault proxy</Message></Error>`)
		return
	case FaultSlowDown:
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate. (injected by the test's fault proxy)</Message></Error>`)
		return
	case FaultReset:
		resetConn(w)
		return
	case FaultHang:
		p.hang(r)
		return
	case FaultDelayForward:
		select {
		case <-time.After(delay):
		case <-p.done:
			return
		}
		ctx = context.WithoutCancel(ctx)
		action = 0 // then forwarded and answered as any other request
	}

	out, err := http.NewRequestWithContext(ctx, r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host // the signature covers the Host header
	out.ContentLength = int64(len(body))
	resp, err := p.client.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	p.answered(seen, resp)
	if action == FaultLoseResponse {
		io.Copy(io.Discard, resp.Body)
		resetConn(w)
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	if action == 0 || resp.ContentLength < 2 {
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
		return
	}
	if action == FaultFlipByte {
		w.WriteHeader(resp.StatusCode)
		b, _ := io.ReadAll(resp.Body)
		if len(b) > 0 {
			b[len(b)/2] ^= 0xff
		}
		w.Write(b)
		return
	}
	// A body fault: the full headers, then half of the body; of a resumed
	// (Range) download, none of it: half of what is left each time would
	// let every body arrive whole after a few resumes, and a test of a
	// failure that outlasts the budget pass or fail by timing.
	w.WriteHeader(resp.StatusCode)
	if r.Header.Get("Range") == "" {
		io.CopyN(w, resp.Body, resp.ContentLength/2)
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	switch action {
	case FaultTruncate:
		closeConn(w)
	case FaultResetMidBody:
		resetConn(w)
	case FaultStallBody:
		p.hang(r)
	}
}

// hang blocks until the client goes away or the proxy stops.
func (p *S3Proxy) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-p.done:
	}
}

// closeConn closes the client connection without finishing the response.
func closeConn(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
}

// resetConn closes the client connection with a TCP reset (SO_LINGER 0).
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// StartSilentListener listens on a free loopback port, accepts every
// connection and never sends a byte (nor closes it until the test ends): a
// server that is up but does not answer. It returns the address,
// "127.0.0.1:<port>".
func StartSilentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c) // read the requests, answer nothing
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}
