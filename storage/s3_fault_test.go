package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage/storagetest"
)

// Small budgets so that giving up happens within seconds in tests.
const (
	testRequestTimeout = 500 * time.Millisecond
	testRetryTimeout   = 1500 * time.Millisecond
)

// hangBound is how long an operation may take before the test calls it a
// hang: far above the budget above, far below the 400 s the issue saw.
const hangBound = 60 * time.Second

// newFaultyS3 returns an S3 backend talking to srv through a fault proxy.
func newFaultyS3(t *testing.T, srv testkit.S3Server, opts storage.S3Options) (*storage.S3, *testkit.S3Proxy) {
	t.Helper()
	proxy := testkit.StartS3Proxy(t, srv.Endpoint)
	opts.Endpoint, opts.PathStyle = proxy.Endpoint, true
	return newTestS3(t, srv, opts), proxy
}

// readAll reads key in full, failing the test if that takes longer than
// hangBound.
func readAll(t *testing.T, b storage.Backend, key string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), hangBound)
	defer cancel()
	rc, err := b.Get(ctx, key)
	if err != nil {
		if ctx.Err() != nil {
			t.Fatalf("get %s hung for %s", key, hangBound)
		}
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if ctx.Err() != nil {
		t.Fatalf("reading %s hung for %s", key, hangBound)
	}
	return data, err
}

// TestS3GetSurvivesCutDownloads is issue 9's "5% of downloads cut short":
// every kind of body failure, at a 5% rate on every GET (resumed ones
// too), with the default budgets, and every object still reads back
// byte for byte.
func TestS3GetSurvivesCutDownloads(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	for _, action := range []testkit.FaultAction{testkit.FaultTruncate, testkit.FaultResetMidBody, testkit.FaultReset, testkit.FaultStatus500} {
		t.Run(action.String(), func(t *testing.T) {
			b, proxy := newFaultyS3(t, srv, storage.S3Options{})
			const objects = 60
			want := map[string][]byte{}
			for i := range objects {
				key := fmt.Sprintf("segments/seg-%03d", i)
				want[key] = storagetest.Content(key, 64<<10+i)
				if err := b.Put(t.Context(), key, bytes.NewReader(want[key]), int64(len(want[key]))); err != nil {
					t.Fatalf("put %s: %v", key, err)
				}
			}
			proxy.Fault(testkit.Fault{Method: http.MethodGet, PathContains: "/segments/", Ranged: true, Action: action, Rate: 0.05})
			for round := range 3 {
				for key, data := range want {
					got, err := readAll(t, b, key)
					if err != nil {
						t.Fatalf("round %d: read %s: %v", round, key, err)
					}
					if !bytes.Equal(got, data) {
						t.Fatalf("round %d: read %s: %d bytes that differ from the %d stored", round, key, len(got), len(data))
					}
				}
			}
			if len(proxy.Injected()) == 0 {
				t.Fatal("the proxy injected no fault; the test proves nothing")
			}
			t.Logf("%d faults injected in %d reads", len(proxy.Injected()), 3*objects)
		})
	}
}

// TestS3TransientFailuresAreMarked: a failure that outlasts the retry
// budget is an error wrapping storage.ErrTransient that names the object
// and the endpoint, for each kind of fault and operation; a missing object
// and a complete read are not transient.
func TestS3TransientFailuresAreMarked(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	b, proxy := newFaultyS3(t, srv, storage.S3Options{RequestTimeout: testRequestTimeout, RetryTimeout: testRetryTimeout})
	data := storagetest.Content("manifest", 10<<10)
	if err := b.Put(t.Context(), "backups/x/manifest.json", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		fault testkit.Fault
		op    func(ctx context.Context) error
	}{
		{"get answered 500", testkit.Fault{Method: http.MethodGet, Action: testkit.FaultStatus500}, getOp(b)},
		{"get reset", testkit.Fault{Method: http.MethodGet, Action: testkit.FaultReset}, getOp(b)},
		{"get body truncated", testkit.Fault{Method: http.MethodGet, Ranged: true, Action: testkit.FaultTruncate}, getOp(b)},
		{"get body reset", testkit.Fault{Method: http.MethodGet, Ranged: true, Action: testkit.FaultResetMidBody}, getOp(b)},
		{"get body stalls", testkit.Fault{Method: http.MethodGet, Ranged: true, Action: testkit.FaultStallBody}, getOp(b)},
		{"get never answered", testkit.Fault{Method: http.MethodGet, Action: testkit.FaultHang}, getOp(b)},
		{"stat never answered", testkit.Fault{Method: http.MethodHead, Action: testkit.FaultHang}, func(ctx context.Context) error {
			_, err := b.Stat(ctx, "backups/x/manifest.json")
			return err
		}},
		{"list answered 500", testkit.Fault{Method: http.MethodGet, Action: testkit.FaultStatus500}, func(ctx context.Context) error {
			return b.List(ctx, "backups/", func(storage.ObjectInfo) error { return nil })
		}},
		{"put never answered", testkit.Fault{Method: http.MethodPut, Action: testkit.FaultHang}, func(ctx context.Context) error {
			return b.Put(ctx, "backups/y/manifest.json", bytes.NewReader(data), int64(len(data)))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy.Clear()
			proxy.Fault(tt.fault)
			ctx, cancel := context.WithTimeout(t.Context(), hangBound)
			defer cancel()
			err := tt.op(ctx)
			if ctx.Err() != nil {
				t.Fatalf("the operation hung for %s (err %v)", hangBound, err)
			}
			if err == nil {
				t.Fatal("the operation succeeded through a fault that never ends")
			}
			t.Logf("error: %v", err)
			if !storage.IsTransient(err) {
				t.Errorf("error is not marked transient: %v", err)
			}
			if !strings.Contains(err.Error(), proxy.Endpoint) {
				t.Errorf("error does not name the endpoint %s", proxy.Endpoint)
			}
			if !strings.Contains(err.Error(), "storage.retry_timeout") {
				t.Errorf("error does not say which setting bounds the retries")
			}
		})
	}

	proxy.Clear()
	_, err := readAll(t, b, "backups/none/manifest.json")
	if !errors.Is(err, storage.ErrNotFound) || storage.IsTransient(err) {
		t.Errorf("missing object: %v; want ErrNotFound, not transient", err)
	}
	if got, err := readAll(t, b, "backups/x/manifest.json"); err != nil || !bytes.Equal(got, data) {
		t.Errorf("read without faults: %d bytes, %v", len(got), err)
	}
}

func getOp(b storage.Backend) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		rc, err := b.Get(ctx, "backups/x/manifest.json")
		if err != nil {
			return err
		}
		defer rc.Close()
		_, err = io.Copy(io.Discard, rc)
		return err
	}
}

// TestS3RetriesWithinBudget: three HTTP 500s and a stalled body, fewer
// faults than the budget allows, are retried and the read succeeds.
func TestS3RetriesWithinBudget(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	b, proxy := newFaultyS3(t, srv, storage.S3Options{RequestTimeout: testRequestTimeout, RetryTimeout: 20 * time.Second})
	data := storagetest.Content("m", 50<<10)
	if err := b.Put(t.Context(), "backups/x/manifest.json", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	proxy.Fault(testkit.Fault{Method: http.MethodGet, Action: testkit.FaultStatus500, Times: 3})
	proxy.Fault(testkit.Fault{Method: http.MethodGet, Action: testkit.FaultStallBody, Times: 1})
	got, err := readAll(t, b, "backups/x/manifest.json")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read: %d bytes, %v", len(got), err)
	}
	if n := len(proxy.Injected()); n != 4 {
		t.Errorf("%d faults injected, want 4: %q", n, proxy.Injected())
	}
}

// TestS3SilentEndpoint is issue 9's "an S3 endpoint that accepts
// connections and never answers": NewS3 gives up within the budget with
// an error naming the endpoint, marked transient.
func TestS3SilentEndpoint(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	endpoint := "http://" + testkit.StartSilentListener(t)
	ctx, cancel := context.WithTimeout(t.Context(), hangBound)
	defer cancel()
	_, err := storage.NewS3(ctx, storage.S3Options{Bucket: srv.Bucket, Endpoint: endpoint, PathStyle: true,
		RequestTimeout: testRequestTimeout, RetryTimeout: testRetryTimeout})
	if ctx.Err() != nil {
		t.Fatalf("NewS3 hung for %s", hangBound)
	}
	if err == nil {
		t.Fatal("NewS3 succeeded against a server that never answers")
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), endpoint) || !storage.IsTransient(err) {
		t.Errorf("error does not name %s or is not transient: %v", endpoint, err)
	}
}

// TestS3PutIfAbsentSurvivesALostResponse: when the response to a
// PutIfAbsent that stored the object is lost, the SDK's retry finds the
// object there (HTTP 412); PutIfAbsent recognises its own bytes and
// succeeds instead of reporting ErrExists (which would make a run wait for
// a repository lock it holds itself). Another writer's object is still
// ErrExists.
func TestS3PutIfAbsentSurvivesALostResponse(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	b, proxy := newFaultyS3(t, srv, storage.S3Options{RequestTimeout: testRequestTimeout, RetryTimeout: 20 * time.Second})
	proxy.Fault(testkit.Fault{Method: http.MethodPut, Action: testkit.FaultLoseResponse, Times: 1})
	if err := b.PutIfAbsent(t.Context(), "lock", []byte("owner a")); err != nil {
		t.Fatalf("PutIfAbsent after a lost response: %v", err)
	}
	if len(proxy.Injected()) != 1 {
		t.Fatalf("faults injected: %q, want one", proxy.Injected())
	}
	if err := b.PutIfAbsent(t.Context(), "lock", []byte("owner b")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("PutIfAbsent over another's object: %v, want ErrExists", err)
	}
	if got, err := readAll(t, b, "lock"); err != nil || string(got) != "owner a" {
		t.Fatalf("lock holds %q, %v", got, err)
	}
}

// TestS3ChecksumMismatchIsDamageWhenRepeated: a read whose bytes differ
// from the object's stored CRC32 is storage.ErrCorrupt (damage, not
// transient) when a re-read gives the same answer (a byte flipped in the
// store's data directory), and ErrTransient when it does not (a byte
// flipped in transit, once), so that readers tell "this object is
// damaged" from "run the command again". Before, both were a plain error
// that every reader took for a storage failure.
func TestS3ChecksumMismatchIsDamageWhenRepeated(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	prefix := "t-" + randomHex(t, 6) + "/repo"
	b, proxy := newFaultyS3(t, srv, storage.S3Options{Prefix: prefix, RequestTimeout: testRequestTimeout, RetryTimeout: testRetryTimeout})
	const key = "segments/seg-0"
	data := storagetest.Content(key, 10<<10)
	if err := b.Put(t.Context(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}

	proxy.Fault(testkit.Fault{Method: http.MethodGet, PathContains: "/segments/", Action: testkit.FaultFlipByte, Times: 1})
	_, err := readAll(t, b, key)
	t.Logf("flipped in transit once: %v", err)
	if len(proxy.Injected()) != 1 {
		t.Fatalf("the proxy injected %d faults, want 1", len(proxy.Injected()))
	}
	if err == nil || !storage.IsTransient(err) || storage.IsCorrupt(err) {
		t.Errorf("a byte flipped in transit (a re-read matches): got %v, want a transient error, not ErrCorrupt", err)
	}

	path := filepath.Join(srv.Dir, srv.Bucket, filepath.FromSlash(prefix+"/"+key))
	stored, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	stored[len(stored)/2] ^= 0xff
	if err := os.WriteFile(path, stored, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = readAll(t, b, key)
	t.Logf("flipped on disk: %v", err)
	if err == nil || !storage.IsCorrupt(err) || storage.IsTransient(err) {
		t.Errorf("a byte flipped in the stored object: got %v, want ErrCorrupt, not transient", err)
	}
	if err != nil && !strings.Contains(err.Error(), key) {
		t.Errorf("the error does not name the object %s: %v", key, err)
	}
}

// TestS3EndpointThatIsNotS3: a storage.endpoint that answers every request
// with 200 and a web page (a wrong port, a proxy's landing page) made
// `list` say "no backups", exit 0, and restore "holds no complete backup"
// (new-user test). A listing without the bucket's name is not S3's answer.
func TestS3EndpointThatIsNotS3(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><html><body><h1>Welcome</h1></body></html>")
	}))
	t.Cleanup(web.Close)
	ctx, cancel := context.WithTimeout(t.Context(), hangBound)
	defer cancel()
	b, err := storage.NewS3(ctx, storage.S3Options{Bucket: srv.Bucket, Endpoint: web.URL, PathStyle: true,
		RequestTimeout: testRequestTimeout, RetryTimeout: testRetryTimeout})
	if err == nil {
		err = b.List(ctx, "backups/", func(storage.ObjectInfo) error { return nil })
	}
	if err == nil {
		t.Fatal("an endpoint that answers with a web page listed as an empty bucket")
	}
	if !strings.Contains(err.Error(), web.URL) || !strings.Contains(err.Error(), "storage.endpoint") {
		t.Errorf("error does not name the endpoint %s and storage.endpoint: %v", web.URL, err)
	}
}

// TestS3FailedMultipartUploadIsAborted: a multipart upload whose part or
// completion the server keeps failing past storage.retry_timeout fails the
// Put with a transient error naming the object, leaves no object and no
// multipart upload behind (newTestS3's cleanup checks the uploads), and
// the next Put of the key succeeds. Nothing is written to the process's
// standard logger (raw lines on stderr break JSON logs; the SDK's transfer
// manager logs a failed completion there).
func TestS3FailedMultipartUploadIsAborted(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	var logged bytes.Buffer
	log.SetOutput(&logged)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	b, proxy := newFaultyS3(t, srv, storage.S3Options{RequestTimeout: testRequestTimeout, RetryTimeout: testRetryTimeout})
	data := storagetest.Content("multipart", storagetest.BigSize) // 3 parts of 5 MiB
	tests := []struct {
		name  string
		fault testkit.Fault
	}{
		// PUTs of a multipart upload are its parts: the first passes.
		{"a later part answered 500", testkit.Fault{Method: http.MethodPut, PathContains: "/mp-part", Action: testkit.FaultStatus500, Skip: 1}},
		{"a later part's connection reset", testkit.Fault{Method: http.MethodPut, PathContains: "/mp-part-reset", Action: testkit.FaultReset, Skip: 1}},
		// POSTs are CreateMultipartUpload, then CompleteMultipartUpload.
		{"completion answered 500", testkit.Fault{Method: http.MethodPost, PathContains: "/mp-complete", Action: testkit.FaultStatus500, Skip: 1}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := strings.TrimPrefix(tt.fault.PathContains, "/")
			proxy.Clear()
			proxy.Fault(tt.fault)
			ctx, cancel := context.WithTimeout(t.Context(), hangBound)
			defer cancel()
			err := b.Put(ctx, key, bytes.NewReader(data), -1)
			if ctx.Err() != nil {
				t.Fatalf("Put hung for %s (err %v)", hangBound, err)
			}
			if err == nil {
				t.Fatalf("Put succeeded through faults on every retry (%v)", proxy.Injected())
			}
			t.Logf("error: %v", err)
			if logged.Len() > 0 {
				t.Errorf("the failed Put wrote to the standard logger: %s", logged.String())
				logged.Reset()
			}
			if !storage.IsTransient(err) || !strings.Contains(err.Error(), key) {
				t.Errorf("error is not transient or does not name %s: %v", key, err)
			}
			proxy.Clear()
			if _, err := b.Stat(t.Context(), key); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("row %d: Stat after the failed Put = %v, want ErrNotFound", i, err)
			}
			if err := b.Put(t.Context(), key, bytes.NewReader(data), int64(len(data))); err != nil {
				t.Fatalf("Put without faults: %v", err)
			}
			if got, err := readAll(t, b, key); err != nil || !bytes.Equal(got, data) {
				t.Errorf("read back %d bytes (%v), want the %d put", len(got), err, len(data))
			}
		})
	}
}
