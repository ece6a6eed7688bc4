package storage_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// onlyReader hides a reader's Seek, so that Put streams it.
type onlyReader struct{ io.Reader }

// putEachKind writes under prefix one object by each write path of the S3
// backend: a PutObject from a seeker (putSmall), a PutObject of a streamed
// body below the part size, a multipart upload of a streamed 6 MiB body
// (two parts of 5 MiB), and a PutIfAbsent.
func putEachKind(t *testing.T, b *storage.S3, prefix string) map[string][]byte {
	t.Helper()
	objs := map[string][]byte{
		prefix + "small":    []byte("a manifest"),
		prefix + "streamed": bytes.Repeat([]byte("s"), 1000),
		prefix + "big":      bytes.Repeat([]byte("0123456789abcdef"), 6<<20/16),
		prefix + "absent":   []byte("a lock"),
	}
	ctx := t.Context()
	if err := b.Put(ctx, prefix+"small", bytes.NewReader(objs[prefix+"small"]), int64(len(objs[prefix+"small"]))); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, prefix+"streamed", onlyReader{bytes.NewReader(objs[prefix+"streamed"])}, -1); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, prefix+"big", onlyReader{bytes.NewReader(objs[prefix+"big"])}, -1); err != nil {
		t.Fatal(err)
	}
	if err := b.PutIfAbsent(ctx, prefix+"absent", objs[prefix+"absent"]); err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestS3ServerSideEncryptionHeaders: storage.server_side_encryption is sent
// on every PutObject and CreateMultipartUpload (and on no UploadPart, which
// takes none: S3 encrypts the parts as CreateMultipartUpload said), as seen
// on the wire by the proxy; versitygw (v1.8.0, posix) accepts the headers,
// stores the objects, which read back whole, and ignores them: its answers
// carry no x-amz-server-side-encryption header (it encrypts nothing).
func TestS3ServerSideEncryptionHeaders(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	const kmsKey = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	tests := []struct {
		name string
		opts storage.S3Options
		want map[string]string // headers of every PutObject and CreateMultipartUpload; "" absent
	}{
		{"none", storage.S3Options{}, map[string]string{
			"X-Amz-Server-Side-Encryption": "", "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id": "", "X-Amz-Server-Side-Encryption-Bucket-Key-Enabled": ""}},
		{"SSE-S3", storage.S3Options{ServerSideEncryption: storage.SSES3}, map[string]string{
			"X-Amz-Server-Side-Encryption": "AES256", "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id": "", "X-Amz-Server-Side-Encryption-Bucket-Key-Enabled": ""}},
		{"SSE-KMS with the account's key", storage.S3Options{ServerSideEncryption: storage.SSEKMS}, map[string]string{
			"X-Amz-Server-Side-Encryption": "aws:kms", "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id": "", "X-Amz-Server-Side-Encryption-Bucket-Key-Enabled": ""}},
		{"SSE-KMS with a key and a bucket key", storage.S3Options{ServerSideEncryption: storage.SSEKMS, SSEKMSKeyID: kmsKey, SSEBucketKey: true}, map[string]string{
			"X-Amz-Server-Side-Encryption": "aws:kms", "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id": kmsKey, "X-Amz-Server-Side-Encryption-Bucket-Key-Enabled": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := testkit.StartS3Proxy(t, srv.Endpoint)
			opts := tt.opts
			opts.Endpoint, opts.PathStyle = proxy.Endpoint, true
			b := newTestS3(t, srv, opts)
			objs := putEachKind(t, b, "sse/")
			kinds := map[string]int{}
			for _, r := range proxy.Requests() {
				var kind string
				switch {
				case r.Method == "PUT" && r.Query == "" || r.Method == "PUT" && strings.HasPrefix(r.Query, "x-id=PutObject"):
					kind = "PutObject"
				case r.Method == "POST" && strings.HasPrefix(r.Query, "uploads"):
					kind = "CreateMultipartUpload"
				case r.Method == "PUT" && strings.Contains(r.Query, "partNumber="):
					kind = "UploadPart"
				default:
					continue
				}
				kinds[kind]++
				if r.Status != 200 {
					t.Errorf("%s %s: versitygw answered %d, want 200", kind, r.Path, r.Status)
				}
				if got := r.RespHeader.Get("X-Amz-Server-Side-Encryption"); got != "" {
					t.Errorf("%s %s: versitygw answered x-amz-server-side-encryption %q; the docs say it ignores SSE", kind, r.Path, got)
				}
				for h, want := range tt.want {
					if kind == "UploadPart" {
						want = "" // UploadPart takes no SSE header (only SSE-C's)
					}
					if got := r.Header.Get(h); got != want {
						t.Errorf("%s %s: %s %q, want %q", kind, r.Path, h, got, want)
					}
				}
			}
			if kinds["PutObject"] != 3 || kinds["CreateMultipartUpload"] != 1 || kinds["UploadPart"] != 2 {
				t.Errorf("requests seen %v, want 3 PutObject, 1 CreateMultipartUpload, 2 UploadPart", kinds)
			}
			for k, want := range objs {
				got := readObject(t, b, k)
				if !bytes.Equal(got, want) {
					t.Errorf("%s read back %d bytes, want the %d written", k, len(got), len(want))
				}
			}
		})
	}
}

func readObject(t *testing.T, b storage.Backend, key string) []byte {
	t.Helper()
	rc, err := b.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return got
}

// TestNewS3RefusesBadWriteSettings: encryption and retention settings S3
// would refuse (or that make no sense) fail NewS3 naming the setting,
// before any request.
func TestNewS3RefusesBadWriteSettings(t *testing.T) {
	keep := func(string) bool { return true }
	tests := []struct {
		name string
		opts storage.S3Options
		want string
	}{
		{"an unknown algorithm", storage.S3Options{ServerSideEncryption: "AES-256"}, `server-side encryption "AES-256" is not AES256 (SSE-S3) or aws:kms (SSE-KMS)`},
		{"a KMS key id without aws:kms", storage.S3Options{ServerSideEncryption: storage.SSES3, SSEKMSKeyID: "k"}, "a KMS key id and the bucket key apply to server-side encryption aws:kms only"},
		{"a bucket key without encryption", storage.S3Options{SSEBucketKey: true}, "a KMS key id and the bucket key apply to server-side encryption aws:kms only"},
		{"an unknown mode", storage.S3Options{Retention: storage.ObjectRetention{Mode: "governance", Period: time.Hour}, Retained: keep}, `retention mode "governance" is not GOVERNANCE or COMPLIANCE`},
		{"a mode without a period", storage.S3Options{Retention: storage.ObjectRetention{Mode: storage.RetentionGovernance}, Retained: keep}, "retention period 0s is outside (0, 36500 days]"},
		{"a period above 100 years", storage.S3Options{Retention: storage.ObjectRetention{Mode: storage.RetentionCompliance, Period: storage.MaxRetentionPeriod + time.Hour}, Retained: keep}, "is outside (0, 36500 days]"},
		{"a period without a mode", storage.S3Options{Retention: storage.ObjectRetention{Period: time.Hour}}, "a retention period without a retention mode"},
		{"a retention without the keys to retain", storage.S3Options{Retention: storage.ObjectRetention{Mode: storage.RetentionGovernance, Period: time.Hour}}, "a retention without S3Options.Retained"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Bucket = "kdr-test"
			opts.Endpoint = "http://" + testkit.StartSilentListener(t) // never asked
			_, err := storage.NewS3(t.Context(), opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewS3: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestS3ObjectLockRetention: with a retention, the objects whose keys
// Retained selects carry it (every write path: PutObject, a multipart
// upload, PutIfAbsent), read back with GetObjectRetention through the
// SDK and through the AWS CLI; the others carry none. versitygw refuses to
// delete or overwrite a retained object (403 AccessDenied), which the
// backend reports as a *RetainedError with the retain-until date, and the
// object stays whole; an object without retention is deleted as usual.
// versitygw's posix backend needs no Content-MD5: the CRC32 checksum each
// write carries is what S3 requires of Object Lock writes.
func TestS3ObjectLockRetention(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	bucket := "kdr-locked-" + randomHex(t, 4)
	srv.CreateLockedBucket(t, bucket)
	for _, mode := range []string{storage.RetentionGovernance, storage.RetentionCompliance} {
		t.Run(mode, func(t *testing.T) {
			ctx := t.Context()
			const period = 2 * time.Hour
			opts := storage.S3Options{Bucket: bucket, Retention: storage.ObjectRetention{Mode: mode, Period: period},
				Retained: func(key string) bool { return strings.HasPrefix(key, "keep/") }}
			b := newTestS3(t, srv, opts)
			prefix := strings.TrimSuffix(strings.TrimPrefix(b.Location(), "s3://"+bucket+"/"), "/") + "/"
			start := time.Now()
			kept := putEachKind(t, b, "keep/")
			end := time.Now()
			scratch := putEachKind(t, b, "scratch/")

			cl := srv.Client()
			var until time.Time
			for k := range kept {
				out, err := cl.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: aws.String(bucket), Key: aws.String(prefix + k)})
				if err != nil {
					t.Fatalf("GetObjectRetention %s: %v", k, err)
				}
				got := aws.ToTime(out.Retention.RetainUntilDate)
				if string(out.Retention.Mode) != mode || got.Before(start.Add(period).Add(-time.Second)) || got.After(end.Add(period)) {
					t.Errorf("%s: retention %s until %s, want %s until %s..%s", k, out.Retention.Mode, got, mode, start.Add(period), end.Add(period))
				}
				r, err := b.Retention(ctx, k)
				if err != nil || r.Mode != mode || !r.Until.Equal(got) {
					t.Errorf("Retention(%s) = %+v, %v; want %s until %s", k, r, err, mode, got)
				}
				if k == "keep/big" {
					until = got
				}
			}
			// The AWS CLI (botocore) reads the same retention.
			var cli struct {
				Retention struct {
					Mode            string
					RetainUntilDate time.Time
				}
			}
			srv.AWSS3API(t, &cli, "get-object-retention", "--bucket", bucket, "--key", prefix+"keep/big")
			if cli.Retention.Mode != mode || !cli.Retention.RetainUntilDate.Equal(until) {
				t.Errorf("aws s3api get-object-retention: %+v, want %s until %s", cli.Retention, mode, until)
			}
			for k := range scratch {
				_, err := cl.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: aws.String(bucket), Key: aws.String(prefix + k)})
				if code := apiCode(err); code != "NoSuchObjectLockConfiguration" {
					t.Errorf("GetObjectRetention %s (not retained): %v, want NoSuchObjectLockConfiguration", k, err)
				}
				if r, err := b.Retention(ctx, k); err != nil || r != (storage.Retention{}) {
					t.Errorf("Retention(%s) = %+v, %v; want none", k, r, err)
				}
			}

			// The server refuses deleting and replacing a retained object.
			err := b.Delete(ctx, "keep/big")
			var re *storage.RetainedError
			if !errors.Is(err, storage.ErrRetained) || !errors.As(err, &re) || !re.Retention.Until.Equal(until) || re.Key != "keep/big" {
				t.Fatalf("Delete of a retained object: %v, want a RetainedError until %s", err, until)
			}
			if !strings.Contains(err.Error(), "s3://"+bucket+"/"+prefix+"keep/big") || !strings.Contains(err.Error(), until.UTC().Format(time.RFC3339)) {
				t.Errorf("error %q does not name the object and its retain-until date", err)
			}
			err = b.Put(ctx, "keep/small", bytes.NewReader([]byte("other")), 5)
			if !errors.Is(err, storage.ErrRetained) {
				t.Fatalf("Put over a retained object: %v, want ErrRetained", err)
			}
			if msg := srv.AWSS3APIFails(t, "delete-object", "--bucket", bucket, "--key", prefix+"keep/small"); !strings.Contains(msg, "AccessDenied") {
				t.Errorf("aws s3api delete-object of a retained object: %s, want AccessDenied", msg)
			}
			for k, want := range kept {
				if got := readObject(t, b, k); !bytes.Equal(got, want) {
					t.Errorf("retained %s changed: %d bytes, want the %d written", k, len(got), len(want))
				}
			}
			for k := range scratch {
				if err := b.Delete(ctx, k); err != nil {
					t.Errorf("Delete %s (not retained): %v", k, err)
				}
				if _, err := b.Stat(ctx, k); !errors.Is(err, storage.ErrNotFound) {
					t.Errorf("%s after Delete: %v, want ErrNotFound", k, err)
				}
			}
		})
	}
}

func apiCode(err error) string {
	var ae interface{ ErrorCode() string }
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// TestNewS3RefusesRetentionWithoutObjectLock: a retention on a bucket
// without Object Lock is refused by NewS3 (GetObjectLockConfiguration:
// ObjectLockConfigurationNotFoundError) with ErrObjectLockDisabled, naming
// the bucket and the fix, before any write: the proxy sees no PUT or POST
// and the bucket stays empty. Without it, every retained PutObject would
// fail (versitygw: 400 InvalidRequest "Bucket is missing
// ObjectLockConfiguration") after the lock and progress were written.
func TestNewS3RefusesRetentionWithoutObjectLock(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	proxy := testkit.StartS3Proxy(t, srv.Endpoint)
	_, err := storage.NewS3(t.Context(), storage.S3Options{Bucket: srv.Bucket, Endpoint: proxy.Endpoint, PathStyle: true,
		Retention: storage.ObjectRetention{Mode: storage.RetentionCompliance, Period: time.Hour}, Retained: func(string) bool { return true }})
	if !errors.Is(err, storage.ErrObjectLockDisabled) {
		t.Fatalf("NewS3 with a retention on a bucket without Object Lock: %v, want ErrObjectLockDisabled", err)
	}
	for _, want := range []string{srv.Bucket, "--object-lock-enabled-for-bucket", "remove storage.object_lock", "nothing was written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	for _, r := range proxy.Requests() {
		if r.Method != "GET" && r.Method != "HEAD" {
			t.Errorf("NewS3 sent %s %s?%s before refusing", r.Method, r.Path, r.Query)
		}
	}
	out, err := srv.Client().ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(srv.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 0 {
		t.Errorf("bucket holds %d objects after the refusal, want none", len(out.Contents))
	}
	// The same bucket without the retention is fine: the check is the
	// retention's only.
	if _, err := storage.NewS3(t.Context(), storage.S3Options{Bucket: srv.Bucket, Endpoint: srv.Endpoint, PathStyle: true}); err != nil {
		t.Fatalf("NewS3 without retention: %v", err)
	}
}
