package storage

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go/middleware"
)

// retryPolicy holds the S3 backend's timeouts and retry budget (see
// S3Options.RequestTimeout and RetryTimeout).
type retryPolicy struct {
	requestTimeout time.Duration
	retryTimeout   time.Duration
	maxBackoff     time.Duration
}

func newRetryPolicy(requestTimeout, retryTimeout time.Duration) retryPolicy {
	return retryPolicy{
		requestTimeout: requestTimeout,
		retryTimeout:   retryTimeout,
		maxBackoff:     min(DefaultS3MaxBackoff, retryTimeout/4),
	}
}

// httpClient returns the HTTP client of the S3 backend: HTTP/1.1 (as S3
// speaks), every connection step bounded by requestTimeout, and every read
// and write on a connection by a rolling deadline of requestTimeout (net/http
// has no timeout for a body that stops arriving, nor for a request body
// the server stops reading). Idle connections are closed after half of
// requestTimeout, before their rolling read deadline could fire under a
// request that has just picked them.
func (p retryPolicy) httpClient() aws.HTTPClient {
	d := p.requestTimeout
	return awshttp.NewBuildableClient().
		WithReadTimeout(0). // ours covers reads and writes
		WithDialerOptions(func(dl *net.Dialer) { dl.Timeout = d }).
		WithTransportOptions(func(tr *http.Transport) {
			dial := tr.DialContext
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &deadlineConn{Conn: c, timeout: d}, nil
			}
			tr.TLSHandshakeTimeout = d
			tr.ResponseHeaderTimeout = d
			tr.IdleConnTimeout = min(tr.IdleConnTimeout, d/2)
			tr.ForceAttemptHTTP2 = false
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		})
}

// deadlineConn gives every Read and Write its own deadline, timeout from
// the moment it is called.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// retryer is the SDK's retry.Standard (its retryable errors, exponential
// backoff with jitter capped at maxBackoff) without the client-side retry
// quota, which an outage would use up in seconds, and bounded by time
// instead of by a count: no retry once retryTimeout has passed since the
// operation's first attempt (markOperationStart records it).
func (p retryPolicy) retryer() aws.Retryer {
	return &budgetRetryer{
		RetryerV2: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = maxS3Attempts
			o.MaxBackoff = p.maxBackoff
			o.RateLimiter = ratelimit.None
		}),
		budget: p.retryTimeout,
	}
}

// maxS3Attempts is a backstop; the time budget ends retries well before.
const maxS3Attempts = 1000

type budgetRetryer struct {
	aws.RetryerV2
	budget time.Duration
}

// GetRetryToken refuses another attempt once the budget is spent.
func (r *budgetRetryer) GetRetryToken(ctx context.Context, opErr error) (func(error) error, error) {
	if start, ok := ctx.Value(operationStartKey{}).(time.Time); ok {
		if elapsed := time.Since(start); elapsed >= r.budget {
			return nil, &budgetError{last: opErr, elapsed: elapsed, budget: r.budget}
		}
	}
	return r.RetryerV2.GetRetryToken(ctx, opErr)
}

type operationStartKey struct{}

// markOperationStart records in the context when an operation starts,
// before its first attempt, for budgetRetryer.
func markOperationStart(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("kafkastreams-dr/operation-start",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			return next.HandleInitialize(context.WithValue(ctx, operationStartKey{}, time.Now()), in)
		}), middleware.Before)
}

// budgetError is the last error of an operation whose retry budget ran out.
type budgetError struct {
	last    error
	elapsed time.Duration
	budget  time.Duration
}

func (e *budgetError) Error() string {
	return fmt.Sprintf("%v (gave up after retrying for %s; storage.retry_timeout is %s)", e.last, e.elapsed.Round(time.Millisecond), e.budget)
}

func (e *budgetError) Unwrap() error { return e.last }

// backoff returns the wait before resume number attempt (1, 2, ...):
// "full jitter" exponential backoff from 100 ms, capped at maxBackoff.
func (p retryPolicy) backoff(attempt int) time.Duration {
	d := 100 * time.Millisecond << min(attempt, 10)
	d = min(d, p.maxBackoff)
	return time.Duration(rand.Int64N(int64(d) + 1))
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isChecksumMismatch reports whether err is the SDK's verdict that a whole
// object's bytes differ from the checksum stored with it: damage, not a
// transient failure. (The SDK's error type is unexported.)
func isChecksumMismatch(err error) bool {
	return err != nil && strings.Contains(err.Error(), "checksum did not match")
}

var errShortBody = errors.New("the download ended before the announced Content-Length")
