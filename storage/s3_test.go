package storage_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage/storagetest"
)

// newTestS3 returns an S3 backend on srv under a fresh random prefix, with
// the minimum part size so that the suite's big objects use multipart
// uploads. The cleanup checks that no multipart upload was left behind.
func newTestS3(t *testing.T, srv testkit.S3Server, opts storage.S3Options) *storage.S3 {
	t.Helper()
	if opts.Bucket == "" {
		opts.Bucket = srv.Bucket
	}
	if opts.Endpoint == "" {
		opts.Endpoint = srv.Endpoint
		opts.PathStyle = true
	}
	if opts.Prefix == "" {
		opts.Prefix = "t-" + randomHex(t, 6) + "/repo"
	}
	if opts.PartSize == 0 {
		opts.PartSize = 5 << 20
	}
	b, err := storage.NewS3(t.Context(), opts)
	if err != nil {
		t.Fatalf("NewS3: %v", err)
	}
	t.Cleanup(func() {
		if ups := multipartUploads(t, srv, opts.Prefix+"/"); len(ups) > 0 {
			t.Errorf("multipart uploads left behind under %s: %q", opts.Prefix, ups)
		}
	})
	return b
}

func multipartUploads(t *testing.T, srv testkit.S3Server, prefix string) []string {
	t.Helper()
	out, err := srv.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{
		Bucket: aws.String(srv.Bucket),
		Prefix: aws.String(prefix),
	})
	if err != nil {
		t.Fatalf("list multipart uploads: %v", err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, aws.ToString(u.Key))
	}
	return keys
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func TestS3Conformance(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		return newTestS3(t, srv, storage.S3Options{})
	})
}

// recorder is a reverse proxy in front of the S3 server that records
// every request (field case 24 A1, S3-compatible stores: assert the URL
// style on the wire).
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request // clones without bodies
}

func (rec *recorder) requests() []*http.Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.reqs)
}

// startRecorder starts the proxy on host ("localhost" or "127.0.0.1") and
// returns its base URL. modify, if not nil, may alter responses (fault
// injection).
func startRecorder(t *testing.T, srv testkit.S3Server, host string, modify func(*http.Response) error) (*recorder, string) {
	t.Helper()
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = modify
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, r.Clone(context.Background()))
		rec.mu.Unlock()
		// The Host header stays the proxy's: the client signed it.
		proxy.ServeHTTP(w, r)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.Listener = l
	ts.Start()
	t.Cleanup(ts.Close)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return rec, "http://" + net.JoinHostPort(host, port)
}

// TestS3PathStyleRequests is field case 24 A1 (docs/DOMAIN.md#field-case-24,
// S3-compatible stores): with PathStyle, requests go to
// http://host:port/<bucket>/<prefix>/<key>, never to a bucket sub-domain.
func TestS3PathStyleRequests(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	rec, endpoint := startRecorder(t, srv, "localhost", nil)
	b, err := storage.NewS3(t.Context(), storage.S3Options{
		Bucket: srv.Bucket, Prefix: "kafka-dr/backups", Endpoint: endpoint, PathStyle: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := "topics/metrics/partition=0/seg-1"
	if err := b.Put(ctx, key, strings.NewReader("segment"), 7); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stat(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := b.List(ctx, "topics/", func(storage.ObjectInfo) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if want := "s3://" + srv.Bucket + "/kafka-dr/backups"; b.Location() != want {
		t.Errorf("Location() = %q, want %q", b.Location(), want)
	}

	wantHost := strings.TrimPrefix(endpoint, "http://")
	wantObjectPath := "/" + srv.Bucket + "/kafka-dr/backups/" + key
	var sawPut, sawHead, sawList, sawBucketHead bool
	for _, r := range rec.requests() {
		if r.Host != wantHost {
			t.Errorf("%s %s went to host %q, want %q (virtual-hosted style?)", r.Method, r.URL, r.Host, wantHost)
		}
		switch {
		case r.Method == http.MethodPut && r.URL.Path == wantObjectPath:
			sawPut = true
			// Put sends a checksum (header or aws-chunked trailer).
			if r.Header.Get("X-Amz-Checksum-Crc32") == "" && !strings.Contains(strings.ToLower(r.Header.Get("X-Amz-Trailer")), "x-amz-checksum-crc32") {
				t.Errorf("PutObject without a CRC32 checksum; headers: %v", r.Header)
			}
		case r.Method == http.MethodHead && r.URL.Path == wantObjectPath:
			sawHead = true
		case r.Method == http.MethodHead && r.URL.Path == "/"+srv.Bucket:
			sawBucketHead = true
		case r.Method == http.MethodGet && r.URL.Path == "/"+srv.Bucket && r.URL.Query().Get("list-type") == "2":
			sawList = true
			if got := r.URL.Query().Get("prefix"); got != "kafka-dr/backups/topics/" {
				t.Errorf("ListObjectsV2 prefix = %q, want kafka-dr/backups/topics/", got)
			}
		default:
			if !strings.HasPrefix(r.URL.Path, "/"+srv.Bucket) {
				t.Errorf("%s %s: path does not start with /%s", r.Method, r.URL, srv.Bucket)
			}
		}
	}
	if !sawPut || !sawHead || !sawList || !sawBucketHead {
		t.Errorf("recorded requests miss one of PutObject %v, HeadObject %v, ListObjectsV2 %v, HeadBucket %v: %v",
			sawPut, sawHead, sawList, sawBucketHead, rec.requests())
	}
}

// TestS3ListSmallPages follows continuation tokens across many pages.
func TestS3ListSmallPages(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	rec, endpoint := startRecorder(t, srv, "127.0.0.1", nil)
	b := newTestS3(t, srv, storage.S3Options{Endpoint: endpoint, PathStyle: true, ListPageSize: 7})
	var want []string
	for i := range 50 {
		key := "p/" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + randomHex(t, 2)
		want = append(want, key)
		if err := b.Put(t.Context(), key, bytes.NewReader(nil), 0); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	var got []string
	if err := b.List(t.Context(), "p/", func(i storage.ObjectInfo) error { got = append(got, i.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("List = %d keys %q\nwant %d keys %q", len(got), got, len(want), want)
	}
	pages := 0
	for _, r := range rec.requests() {
		if r.URL.Query().Get("list-type") == "2" {
			pages++
			if r.URL.Query().Get("max-keys") != "7" {
				t.Errorf("ListObjectsV2 max-keys = %q, want 7", r.URL.Query().Get("max-keys"))
			}
		}
	}
	if pages != 8 { // ceil(50/7)
		t.Errorf("List made %d ListObjectsV2 calls, want 8", pages)
	}
}

func TestNewS3Errors(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedEndpoint := "http://" + closed.Addr().String()
	closed.Close()

	tests := []struct {
		name      string
		opts      storage.S3Options
		secret    string   // if set, AWS_SECRET_ACCESS_KEY for this case
		wantParts []string // substrings the error must contain
	}{
		{"missing bucket",
			storage.S3Options{Bucket: "no-such-bucket", Endpoint: srv.Endpoint, PathStyle: true}, "",
			[]string{`"no-such-bucket"`, srv.Endpoint, "does not exist", "create it"}},
		{"invalid bucket name",
			storage.S3Options{Bucket: "Bad_Bucket", Endpoint: srv.Endpoint, PathStyle: true}, "",
			[]string{`"Bad_Bucket"`, srv.Endpoint}},
		{"wrong secret key",
			storage.S3Options{Bucket: srv.Bucket, Endpoint: srv.Endpoint, PathStyle: true}, "wrong-secret-do-not-print",
			[]string{srv.Bucket, srv.Endpoint, "credentials were rejected", "SignatureDoesNotMatch", "AWS_SECRET_ACCESS_KEY"}},
		{"nothing listening at endpoint",
			storage.S3Options{Bucket: srv.Bucket, Endpoint: closedEndpoint, PathStyle: true, RequestTimeout: time.Second, RetryTimeout: time.Second}, "",
			[]string{srv.Bucket, closedEndpoint, "cannot reach", "path-style"}},
		{"endpoint without scheme",
			storage.S3Options{Bucket: srv.Bucket, Endpoint: "minio.storage.svc:9000"}, "",
			[]string{"minio.storage.svc:9000", "https://host:port"}},
		{"no bucket", storage.S3Options{Endpoint: srv.Endpoint}, "", []string{"no bucket"}},
		{"part size below 5 MiB",
			storage.S3Options{Bucket: srv.Bucket, Endpoint: srv.Endpoint, PartSize: 1 << 20}, "",
			[]string{"part size", "5 MiB"}},
		{"upload buffer below one part",
			storage.S3Options{Bucket: srv.Bucket, Endpoint: srv.Endpoint, PartSize: 8 << 20, UploadBufferBytes: 4 << 20}, "",
			[]string{"upload buffer", "one part", "storage.upload_buffer_bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.secret != "" {
				t.Setenv("AWS_SECRET_ACCESS_KEY", tt.secret)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			_, err := storage.NewS3(ctx, tt.opts)
			if err == nil {
				t.Fatal("NewS3 succeeded, want an error")
			}
			t.Logf("error: %v", err)
			for _, part := range tt.wantParts {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error does not contain %q", part)
				}
			}
			for _, secret := range []string{srv.SecretKey, "wrong-secret-do-not-print"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error contains a secret key")
				}
			}
		})
	}
}

// TestNewS3WrongAccessKeyID: a wrong access key id is named as rejected
// credentials, not as a missing bucket (issue 14: "bucket does not
// exist"), and is not printed.
func TestNewS3WrongAccessKeyID(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	const wrong = "AKIAWRONGWRONGWRONG1"
	t.Setenv("AWS_ACCESS_KEY_ID", wrong)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := storage.NewS3(ctx, storage.S3Options{Bucket: srv.Bucket, Endpoint: srv.Endpoint, PathStyle: true})
	if err == nil {
		t.Fatal("NewS3 with a wrong access key id succeeded")
	}
	t.Logf("error: %v", err)
	if errors.Is(err, storage.ErrNoSuchBucket) || strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a wrong access key id is reported as a missing bucket: %v", err)
	}
	for _, part := range []string{srv.Bucket, srv.Endpoint, "credentials were rejected", "AWS_ACCESS_KEY_ID"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error does not contain %q", part)
		}
	}
	for _, secret := range []string{srv.SecretKey, wrong} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error contains the key %q", secret)
		}
	}
}

// TestS3AbortStaleUploads is field case 24 A3 / field case 22 A4 (an
// interrupted backup's leftovers): multipart uploads orphaned by a killed
// run are aborted for the backend's prefix only.
func TestS3AbortStaleUploads(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	prefix := "abort-" + randomHex(t, 4)
	b := newTestS3(t, srv, storage.S3Options{Prefix: prefix})
	client := srv.Client()
	ctx := t.Context()
	start := func(key string) {
		t.Helper()
		up, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(srv.Bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		// Upload 2 of 3 parts, as a backup killed mid-segment would.
		for n := int32(1); n <= 2; n++ {
			_, err := client.UploadPart(ctx, &s3.UploadPartInput{
				Bucket: aws.String(srv.Bucket), Key: aws.String(key), UploadId: up.UploadId,
				PartNumber: aws.Int32(n), Body: bytes.NewReader(storagetest.Content(key, 5<<20)),
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	start(prefix + "/topics/t/seg-1000")
	start(prefix + "/topics/t/seg-2000")
	other := prefix + "-other/seg" // shares the prefix string, not the "directory"
	start(other)

	if n, err := b.AbortStaleUploads(ctx, time.Hour); err != nil || n != 0 {
		t.Errorf("AbortStaleUploads(1h) = %d, %v; want 0 (uploads are fresh)", n, err)
	}
	if n, err := b.AbortStaleUploads(ctx, 0); err != nil || n != 2 {
		t.Errorf("AbortStaleUploads(0) = %d, %v; want 2", n, err)
	}
	if ups := multipartUploads(t, srv, prefix+"/"); len(ups) != 0 {
		t.Errorf("uploads left under %s/: %q", prefix, ups)
	}
	if ups := multipartUploads(t, srv, other); len(ups) != 1 {
		t.Errorf("upload outside the prefix = %q, want it kept", ups)
	}
	var listed []string
	if err := b.List(ctx, "", func(i storage.ObjectInfo) error { listed = append(listed, i.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 0 {
		t.Errorf("aborted uploads left objects: %q", listed)
	}
}

// TestS3ConditionalWrites checks that versitygw honours If-None-Match, the
// premise of S3.PutIfAbsent.
func TestS3ConditionalWrites(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	b := newTestS3(t, srv, storage.S3Options{})
	if err := b.CheckConditionalWrites(t.Context(), "probe"); err != nil {
		t.Fatal(err)
	}
}

// TestS3ServerVerifiesChecksums documents that the server rejects a body
// whose checksum does not match, which is what makes sending one useful.
func TestS3ServerVerifiesChecksums(t *testing.T) {
	srv := testkit.StartS3(t)
	_, err := srv.Client().PutObject(t.Context(), &s3.PutObjectInput{
		Bucket:        aws.String(srv.Bucket),
		Key:           aws.String("corrupt"),
		Body:          strings.NewReader("payload"),
		ChecksumCRC32: aws.String("AAAAAA=="), // CRC32 of something else
	})
	if err == nil {
		t.Fatal("server accepted a body with a wrong CRC32 checksum")
	}
	t.Logf("server rejected the wrong checksum: %v", err)
}

// TestS3AndFilesystemByteIdentical is field case 24 A4: the same writes produce
// the same keys, sizes and bytes on disk and on S3.
func TestS3AndFilesystemByteIdentical(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	fsys, err := storage.NewFilesystem(filepath.Join(t.TempDir(), "repo"))
	if err != nil {
		t.Fatal(err)
	}
	backends := []storage.Backend{fsys, newTestS3(t, srv, storage.S3Options{})}
	objects := map[string][]byte{
		"manifest.json":                  []byte(`{"format_version":1}`),
		"topics/metrics/partition=0/0-0": storagetest.Content("seg0", 1),
		"topics/metrics/partition=0/1-9": storagetest.Content("seg1", 6<<20+1),
		"topics/metrics/partition=1/0-0": nil,
	}
	type listing struct {
		key  string
		size int64
		sum  string
	}
	var results [][]listing
	for _, b := range backends {
		for key, data := range objects {
			if err := b.Put(t.Context(), key, bytes.NewReader(data), -1); err != nil {
				t.Fatalf("%s: Put(%q): %v", b.Location(), key, err)
			}
		}
		var got []listing
		err := b.List(t.Context(), "", func(info storage.ObjectInfo) error {
			rc, err := b.Get(t.Context(), info.Key)
			if err != nil {
				return err
			}
			defer rc.Close()
			h := sha256.New()
			if _, err := io.Copy(h, rc); err != nil {
				return err
			}
			got = append(got, listing{info.Key, info.Size, hex.EncodeToString(h.Sum(nil))})
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", b.Location(), err)
		}
		results = append(results, got)
	}
	if !slices.Equal(results[0], results[1]) {
		t.Errorf("backends differ:\n%s: %v\n%s: %v", backends[0].Location(), results[0], backends[1].Location(), results[1])
	}
	if len(results[0]) != len(objects) {
		t.Errorf("listed %d objects, want %d", len(results[0]), len(objects))
	}
}

func TestS3GetMissingIsErrNotFound(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	b := newTestS3(t, srv, storage.S3Options{})
	_, err := b.Get(t.Context(), "nope")
	if !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Get(nope) = %v, want ErrNotFound naming the key", err)
	}
}

// TestS3PutDetectsWrongStoredSize injects a HeadObject answer with a wrong
// size, as a store that truncated the object would give: Put must fail,
// name the object and delete what was stored.
func TestS3PutDetectsWrongStoredSize(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	var lie sync.Mutex
	lying := true
	_, endpoint := startRecorder(t, srv, "127.0.0.1", func(resp *http.Response) error {
		lie.Lock()
		defer lie.Unlock()
		if lying && resp.Request.Method == http.MethodHead && strings.HasSuffix(resp.Request.URL.Path, "/truncated") {
			resp.Header.Set("Content-Length", "3")
			resp.ContentLength = 3
		}
		return nil
	})
	b := newTestS3(t, srv, storage.S3Options{Endpoint: endpoint, PathStyle: true})
	err := b.Put(t.Context(), "truncated", strings.NewReader("0123456789"), 10)
	if err == nil || !strings.Contains(err.Error(), "truncated") || !strings.Contains(err.Error(), "3 bytes") {
		t.Fatalf("Put with a wrong stored size = %v, want an error naming the object and the size", err)
	}
	lie.Lock()
	lying = false
	lie.Unlock()
	if _, err := b.Stat(t.Context(), "truncated"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Stat after the failed Put = %v, want ErrNotFound (object deleted)", err)
	}
}

// TestS3PutRequests pins how Put talks to S3, whatever upload library sends
// the requests (the SDK's upload manager until issue 10, its transfer
// manager until issue 13, storage's own since, with part buffers shared by
// all Puts): an object smaller than PartSize is one PutObject, an
// object of PartSize bytes or more a multipart upload of PartSize parts
// (CreateMultipartUpload, UploadPart × n, CompleteMultipartUpload), and
// every request that carries object bytes carries a CRC32 checksum, in a
// header or an aws-chunked trailer.
func TestS3PutRequests(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	const partSize = 5 << 20
	rec, endpoint := startRecorder(t, srv, "127.0.0.1", nil)
	b := newTestS3(t, srv, storage.S3Options{Endpoint: endpoint, PathStyle: true, PartSize: partSize})
	tests := []struct {
		name      string
		size      int
		multipart bool
		parts     int
	}{
		{"empty object", 0, false, 0},
		{"one byte under the part size", partSize - 1, false, 0},
		{"exactly the part size", partSize, true, 1},
		{"two parts and a byte", 2*partSize + 1, true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("put-requests/%d", tt.size)
			before := len(rec.requests())
			data := storagetest.Content(key, tt.size)
			// An io.Reader that is no io.Seeker, as backup's pipe is.
			if err := b.Put(t.Context(), key, struct{ io.Reader }{bytes.NewReader(data)}, -1); err != nil {
				t.Fatalf("Put(%d bytes): %v", tt.size, err)
			}
			var puts, parts, creates, completes int
			for _, r := range rec.requests()[before:] {
				if !strings.HasSuffix(r.URL.Path, "/"+key) {
					continue
				}
				q := r.URL.Query()
				switch {
				case r.Method == http.MethodPut && q.Has("partNumber"):
					parts++
				case r.Method == http.MethodPut:
					puts++
				case r.Method == http.MethodPost && q.Has("uploads"):
					creates++
					if got := r.Header.Get("X-Amz-Checksum-Algorithm"); !strings.EqualFold(got, "CRC32") {
						t.Errorf("CreateMultipartUpload x-amz-checksum-algorithm = %q, want CRC32", got)
					}
					continue
				case r.Method == http.MethodPost && q.Has("uploadId"):
					completes++
					continue
				default:
					continue
				}
				trailer := strings.ToLower(r.Header.Get("X-Amz-Trailer"))
				if r.Header.Get("X-Amz-Checksum-Crc32") == "" && trailer != "x-amz-checksum-crc32" {
					t.Errorf("%s %s carries no CRC32 checksum (headers %v)", r.Method, r.URL, r.Header)
				}
			}
			if tt.multipart {
				if puts != 0 || creates != 1 || parts != tt.parts || completes != 1 {
					t.Errorf("requests: %d PutObject, %d CreateMultipartUpload, %d UploadPart, %d CompleteMultipartUpload; want 0, 1, %d, 1",
						puts, creates, parts, completes, tt.parts)
				}
			} else if puts != 1 || creates+parts+completes != 0 {
				t.Errorf("requests: %d PutObject and %d multipart requests; want one PutObject", puts, creates+parts+completes)
			}
			got, err := readAll(t, b, key)
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("read back %d bytes (%v), want the %d put", len(got), err, len(data))
			}
		})
	}
}

// TestNewS3MissingBucketSaysSo is a regression test (third new-user pass):
// a bucket that does not exist failed with the whole SDK error appended
// ("operation error S3: HeadBucket, https response error StatusCode: 404,
// RequestID: ..., NotFound: "). The error says the bucket does not exist,
// the S3 operation, status and code in parentheses, the endpoint and the
// fix, wraps storage.ErrNoSuchBucket, and carries the request id only in
// the debug log.
func TestNewS3MissingBucketSaysSo(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := storage.NewS3(ctx, storage.S3Options{Bucket: "no-such-bucket", Endpoint: srv.Endpoint, PathStyle: true, Logger: logger})
	if err == nil {
		t.Fatal("NewS3 of a missing bucket succeeded")
	}
	msg := err.Error()
	t.Logf("error: %s\nlog:\n%s", msg, logged.String())
	for _, w := range []string{`bucket "no-such-bucket" does not exist (S3 ListObjectsV2: 404 NoSuchBucket) at endpoint ` + srv.Endpoint, "create it or fix the bucket name"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not say %q", msg, w)
		}
	}
	for _, sdk := range []string{"operation error", "RequestID", "https response error"} {
		if strings.Contains(msg, sdk) {
			t.Errorf("error %q holds the SDK's text %q", msg, sdk)
		}
	}
	if !errors.Is(err, storage.ErrNoSuchBucket) || storage.IsTransient(err) {
		t.Errorf("error %q: want ErrNoSuchBucket, not transient", msg)
	}
	if !strings.Contains(logged.String(), "RequestID") || !strings.Contains(logged.String(), "level=DEBUG") {
		t.Errorf("the debug log does not hold the SDK error with its request id:\n%s", logged.String())
	}
}
