package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// S3Options configures NewS3. Credentials are deliberately not part of it:
// they come from the AWS SDK's default chain (AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY, the shared config and credentials files with
// AWS_PROFILE, web identity tokens such as EKS IRSA, ECS task roles, EC2
// instance roles), so no secret ever sits in a kafkastreams-dr config file.
type S3Options struct {
	// Bucket is the bucket name. Required.
	Bucket string
	// Prefix is the key prefix inside the bucket under which all keys live,
	// without leading or trailing '/' (they are trimmed), e.g.
	// "backups/prod". Empty means the bucket root.
	Prefix string
	// Region is the signing region, e.g. "eu-west-1". Empty means the
	// default chain's (AWS_REGION, the profile), and "us-east-1" when that
	// is empty too, which suits most S3-compatible stores.
	Region string
	// Endpoint is the base URL of an S3-compatible store, e.g.
	// "http://minio.storage.svc:9000". Empty means AWS S3 (or
	// AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL when set).
	Endpoint string
	// PathStyle sends requests to <endpoint>/<bucket>/<key> instead of
	// <bucket>.<endpoint host>/<key>. Needed by most S3-compatible stores
	// (MinIO, Ceph RGW, versitygw) whose bucket sub-domains do not resolve.
	PathStyle bool
	// PartSize is the multipart upload part size in bytes, default 8 MiB,
	// minimum 5 MiB. Objects smaller than PartSize are sent with a single
	// PutObject. An object can have at most 10 000 parts, so the largest
	// object is 10 000 × PartSize (about 78 GiB by default).
	PartSize int64
	// UploadConcurrency is the number of parts of one object uploaded in
	// parallel, default 2. Each Put holds at most UploadConcurrency+1 part
	// buffers (the parts in flight and the one being read), all taken from
	// the pool that UploadBufferBytes bounds.
	UploadConcurrency int
	// UploadBufferBytes is the total size in bytes of the part buffers of
	// all Puts of this backend together, default
	// DefaultS3UploadBufferBytes (48 MiB: 6 parts of 8 MiB); it is rounded
	// down to whole parts and must hold at least one part (PartSize). The
	// buffers are made when first needed and reused; a Put that finds none
	// free waits for one, so the backend never holds more, however many
	// Puts run at once (backup's partition workers each stream a segment).
	// Objects of known size below PartSize read from a seeker (manifests)
	// take no buffer. Config key storage.upload_buffer_bytes.
	UploadBufferBytes int64
	// ListPageSize is the number of keys List asks for per ListObjectsV2
	// page; 0 means the server's default (1000, the S3 maximum). Tests set
	// it low to exercise pagination.
	ListPageSize int
	// RequestTimeout bounds each step of one attempt of a request:
	// connecting (TCP dial, TLS handshake), waiting for the response
	// headers, and every read and write on the connection, which must move
	// at least one byte within it. A download that stalls mid-body fails
	// its attempt after RequestTimeout (and resumes, see Get); one that is
	// slow but moving does not. 0 means DefaultS3RequestTimeout (30 s).
	// Config key storage.request_timeout.
	RequestTimeout time.Duration
	// RetryTimeout is the retry budget of one operation: a request that
	// fails with a retryable error (connection refused or reset, a timeout,
	// HTTP 500, 502, 503, 504, throttling) is tried again with exponential
	// backoff and jitter (the AWS SDK's retry.Standard, at most
	// DefaultS3MaxBackoff between attempts) until RetryTimeout has passed
	// since its first attempt; a download cut short is resumed within the
	// same budget counted from its first interruption. The last attempt may
	// end up to RequestTimeout plus one backoff later. 0 means
	// DefaultS3RetryTimeout (2 min), longer than a KRaft broker's session
	// timeout (broker.session.timeout.ms, 9 s) so that an S3-compatible
	// store restarting on such a broker's host is waited for. After it the
	// error wraps ErrTransient and names the endpoint. Config key
	// storage.retry_timeout.
	RetryTimeout time.Duration
	// ServerSideEncryption is sent as x-amz-server-side-encryption on every
	// PutObject and CreateMultipartUpload: SSES3 ("AES256") or SSEKMS
	// ("aws:kms"); "" (the default) sends none, and the bucket's default
	// encryption applies (on AWS S3 at least SSE-S3 since 2023-01). Any
	// other value fails NewS3. Config key
	// storage.server_side_encryption.algorithm.
	ServerSideEncryption string
	// OnSSEUnconfirmed, when set with ServerSideEncryption, is called
	// once per S3 (the first time) with the key of a PutObject or
	// CompleteMultipartUpload whose response carried no
	// x-amz-server-side-encryption: the store did not confirm the
	// encryption, and may keep the object in plaintext at rest
	// (versitygw does). The write itself succeeded. Called from the
	// writing goroutine: it must be safe for concurrent use.
	OnSSEUnconfirmed func(key string)
	// SSEKMSKeyID (SSEKMS only) is sent as
	// x-amz-server-side-encryption-aws-kms-key-id: a KMS key id, ARN or
	// alias ARN; "" means the account's AWS managed key aws/s3. Config key
	// storage.server_side_encryption.kms_key_id.
	SSEKMSKeyID string
	// SSEBucketKey (SSEKMS only) sends
	// x-amz-server-side-encryption-bucket-key-enabled: true, an S3 Bucket
	// Key that cuts the KMS requests (and their cost). Config key
	// storage.server_side_encryption.bucket_key.
	SSEBucketKey bool
	// Retention, when its Mode is set, is the Object Lock retention put on
	// every object whose key Retained selects (x-amz-object-lock-mode and
	// x-amz-object-lock-retain-until-date on its PutObject or
	// CreateMultipartUpload; each such request also carries its CRC32
	// checksum, which S3 requires of Object Lock writes). NewS3 then
	// refuses a bucket without Object Lock (ErrObjectLockDisabled, checked
	// with GetObjectLockConfiguration) before anything is written. A Delete
	// or Put the store refuses because the object's retention has not
	// ended fails with a *RetainedError (ErrRetained). Config key
	// storage.object_lock.
	Retention ObjectRetention
	// Retained selects the keys Retention applies to (the repository's
	// format.Retained: the objects a complete backup consists of, never
	// the lock or progress files, which the tool deletes or replaces).
	// Required with Retention.
	Retained func(key string) bool
	// Logger receives the AWS SDK's own log messages (such as "falling back
	// to IMDSv1" while looking for credentials), all at debug level, with
	// the attribute component=aws-sdk and the SDK's classification (WARN,
	// DEBUG). nil drops them. Either way the SDK never writes to stderr
	// itself.
	Logger *slog.Logger
}

// Default values of S3Options.
const (
	DefaultS3PartSize          = 8 << 20
	DefaultS3UploadConcurrency = 2
	// DefaultS3UploadBufferBytes is the default of
	// S3Options.UploadBufferBytes: 6 parts of the default 8 MiB, enough
	// for backup's default 4 partition workers to each have a part in
	// flight and read the next, and small enough that a backup with S3
	// stays under 256 MiB resident (docs/OPERATIONS.md, "Memory").
	DefaultS3UploadBufferBytes = 48 << 20
	DefaultS3RequestTimeout    = 30 * time.Second
	DefaultS3RetryTimeout      = 2 * time.Minute
	// DefaultS3MaxBackoff is the longest wait between two attempts of a
	// request (or two resumes of a download); it is RetryTimeout/4 when
	// that is shorter.
	DefaultS3MaxBackoff = 5 * time.Second
)

// S3 is a Backend storing each object as an S3 object named
// <prefix>/<key> in one bucket, on AWS S3 or an S3-compatible store.
// Create it with NewS3. It is safe for concurrent use.
//
// Integrity: every upload (PutObject, each UploadPart) carries a CRC32
// checksum that the server verifies before storing, the stored size is
// checked with HeadObject after each Put, and Get asks for the checksum
// back so the SDK verifies whole-object checksums while reading.
//
// Failed or cancelled multipart uploads are aborted by Put; uploads
// orphaned by a killed process are removed by AbortStaleUploads (a bucket
// lifecycle rule "AbortIncompleteMultipartUpload" is a good second net).
type S3 struct {
	client            *s3.Client
	partSize          int64     // S3Options.PartSize, defaulted
	uploadConcurrency int       // S3Options.UploadConcurrency, defaulted
	parts             *partPool // the part buffers of all Puts (S3Options.UploadBufferBytes)
	bucket            string
	prefix            string // "" or "some/prefix/" (with the trailing slash)
	endpoint          string // for messages: the endpoint URL or "AWS S3 (<region>)"
	pageSize          int32
	retry             retryPolicy
	writes            *s3Writes // encryption and retention of written objects
}

// minS3PartSize is the smallest part S3 accepts in a multipart upload
// (5 MiB, all parts but the last: "Amazon S3 multipart upload limits" in
// the S3 User Guide).
const minS3PartSize = 5 << 20

var _ Backend = (*S3)(nil)

// NewS3 returns an S3 backend after checking with HeadBucket that the
// bucket is reachable with the credentials found by the default chain.
// The error names the bucket and endpoint and suggests the likely fix
// (bucket missing, access denied, wrong region or endpoint, no
// credentials); it never contains secrets. ctx bounds the loading of
// credentials and the HeadBucket check only.
func NewS3(ctx context.Context, opts S3Options) (*S3, error) {
	if opts.Bucket == "" {
		return nil, errors.New("s3 storage: no bucket given")
	}
	prefix, err := S3Prefix(opts.Prefix)
	if err != nil {
		return nil, fmt.Errorf("s3 storage: prefix: %w", err)
	}
	if prefix != "" {
		prefix += "/"
	}
	if opts.Endpoint != "" {
		u, err := url.Parse(opts.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("s3 storage: endpoint %q is not a URL like https://host:port", opts.Endpoint)
		}
	}
	if opts.PartSize == 0 {
		opts.PartSize = DefaultS3PartSize
	}
	if opts.PartSize < minS3PartSize {
		return nil, fmt.Errorf("s3 storage: part size %d bytes is below the S3 minimum of %d bytes (5 MiB)", opts.PartSize, minS3PartSize)
	}
	if opts.UploadConcurrency <= 0 {
		opts.UploadConcurrency = DefaultS3UploadConcurrency
	}
	if opts.UploadBufferBytes == 0 {
		opts.UploadBufferBytes = DefaultS3UploadBufferBytes
	}
	if opts.UploadBufferBytes < opts.PartSize {
		return nil, fmt.Errorf("s3 storage: upload buffer of %d bytes is below one part of %d bytes; give at least the part size (storage.upload_buffer_bytes)", opts.UploadBufferBytes, opts.PartSize)
	}
	if opts.ListPageSize < 0 || opts.ListPageSize > 1000 {
		return nil, fmt.Errorf("s3 storage: list page size %d is outside 0..1000", opts.ListPageSize)
	}
	if opts.RequestTimeout < 0 || opts.RetryTimeout < 0 {
		return nil, fmt.Errorf("s3 storage: request timeout %s and retry timeout %s must not be negative", opts.RequestTimeout, opts.RetryTimeout)
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = DefaultS3RequestTimeout
	}
	if opts.RetryTimeout == 0 {
		opts.RetryTimeout = DefaultS3RetryTimeout
	}
	policy := newRetryPolicy(opts.RequestTimeout, opts.RetryTimeout)
	writes, err := checkWrites(opts)
	if err != nil {
		return nil, err
	}

	loadOpts := []func(*config.LoadOptions) error{config.WithLogger(sdkLogger(opts.Logger))}
	if opts.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(opts.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("s3 storage: load AWS configuration (environment, shared config files): %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		o.UsePathStyle = opts.PathStyle
		o.HTTPClient = policy.httpClient()
		o.Retryer = policy.retryer()
		o.APIOptions = append(o.APIOptions, markOperationStart)
		// Multipart objects carry composite checksums that cannot be
		// checked on read; do not log a warning for every such Get.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	s := &S3{
		client:            client,
		partSize:          opts.PartSize,
		uploadConcurrency: opts.UploadConcurrency,
		parts:             newPartPool(opts.PartSize, int(opts.UploadBufferBytes/opts.PartSize)),
		bucket:            opts.Bucket,
		prefix:            prefix,
		endpoint:          opts.Endpoint,
		pageSize:          int32(opts.ListPageSize),
		retry:             policy,
		writes:            writes,
	}
	if s.endpoint == "" {
		s.endpoint = "AWS S3 (region " + cfg.Region + ")"
	}
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)}); err != nil {
		var respErr *awshttp.ResponseError
		if errors.As(err, &respErr) && (respErr.HTTPStatusCode() == 404 || respErr.HTTPStatusCode() == 403) {
			// A HEAD answer has no body, so its 404 or 403 does not say
			// whether the bucket is missing, the access key id unknown
			// (versitygw answers 404 to it: a wrong key was reported as
			// a missing bucket) or a policy denies. ListObjectsV2's
			// error body has the code (NoSuchBucket, InvalidAccessKeyId,
			// SignatureDoesNotMatch, AccessDenied): that error is
			// reported when it has one.
			_, lerr := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix), MaxKeys: aws.Int32(1)})
			if lerr != nil && errorCode(lerr) != "" && ctx.Err() == nil {
				err = lerr
			}
		}
		mapped := s.mapError(ctx, "check bucket", "", err)
		if opts.Logger != nil && (errors.Is(mapped, ErrNoSuchBucket) || errors.Is(mapped, ErrNoCredentials)) {
			// The SDK's own text, with the request id a support case
			// needs (or the credential chain it tried), only at debug level.
			opts.Logger.Debug("S3 bucket check failed", "component", "aws-sdk", "bucket", s.bucket, "endpoint", s.endpoint, "err", err)
		}
		return nil, fmt.Errorf("s3 storage: %w", mapped)
	}
	if opts.Retention.Mode != "" {
		if err := s.checkObjectLock(ctx); err != nil {
			return nil, fmt.Errorf("s3 storage: %w", err)
		}
	}
	return s, nil
}

// sdkLogger adapts l for the AWS SDK (aws.Config.Logger, which the S3,
// IMDS and STS clients share): every message at debug level, whatever the
// SDK's classification, since none of them needs the user's attention; a
// nil l drops them. Without it the SDK prints raw "SDK <time> WARN ..."
// lines on stderr.
func sdkLogger(l *slog.Logger) logging.Logger {
	if l == nil {
		return logging.Nop{}
	}
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		l.Debug(fmt.Sprintf(format, v...), "component", "aws-sdk", "classification", string(c))
	})
}

// Location returns "s3://bucket/prefix" ("s3://bucket" without a prefix).
func (s *S3) Location() string {
	if s.prefix == "" {
		return "s3://" + s.bucket
	}
	return "s3://" + s.bucket + "/" + strings.TrimSuffix(s.prefix, "/")
}

// UploadBufferBytes returns the bytes of part buffers that all Puts of s
// share at most: S3Options.UploadBufferBytes (defaulted) rounded down to
// whole parts.
func (s *S3) UploadBufferBytes() int64 { return int64(cap(s.parts.free)) * s.partSize }

func (s *S3) fullKey(key string) string { return s.prefix + key }

// where names an object (or the bucket for key "") in messages.
func (s *S3) where(key string) string {
	if key == "" {
		return "s3://" + s.bucket
	}
	return "s3://" + s.bucket + "/" + s.fullKey(key)
}

// Put stores r under key. An object of known size (size >= 0) below
// PartSize whose reader can seek (a bytes.Reader: manifests, reports, the
// lock) is one PutObject sent straight from r. Any other object is read
// part by part into part buffers of PartSize bytes taken from the
// backend's pool (S3Options.UploadBufferBytes, shared by every Put of this
// backend; a Put waits for a free buffer rather than allocate one): less
// than PartSize in all is one PutObject, more a multipart upload
// (CreateMultipartUpload, UploadPart × n with up to UploadConcurrency
// parts in flight, CompleteMultipartUpload), which S3 publishes atomically
// on completion. Each request carries a CRC32 checksum. size is the length
// in bytes or -1; when size >= 0, a reader yielding a different length
// fails the Put before anything is published. After the upload,
// HeadObject checks that the stored size equals the bytes read; on a
// mismatch the object is deleted and an error returned. On any failure,
// including ctx cancellation, a started multipart upload is aborted
// (AbortMultipartUpload, with a context that outlives ctx's cancellation
// by up to 30 s) and an existing object is left unchanged.
//
// Concurrency: a Put holds part buffers only while it reads r or uploads
// them, so a Put waiting for a buffer waits for another Put's reader or
// request. A caller must not make the reader of one streaming Put wait for
// another streaming Put of the same backend to finish (backup's segment
// pipes are each fed by their own partition worker).
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	var sent int64
	var err error
	var body *sizeReader
	if rs, ok := r.(io.ReadSeeker); ok && size >= 0 && size < s.partSize {
		sent, err = s.putSmall(ctx, key, rs, size)
	} else {
		body = checkedReader(ctx, r, size)
		sent, err = s.putStream(ctx, key, body)
	}
	if err != nil {
		if body != nil && body.err != nil && !errors.Is(err, body.err) {
			err = fmt.Errorf("%w: %w", body.err, err)
		}
		if rerr := s.retainedError(ctx, "put", key, err); rerr != err {
			return rerr
		}
		return s.mapError(ctx, "put", key, err)
	}
	head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.fullKey(key)),
	})
	if err != nil {
		return s.mapError(ctx, "put: check stored size of", key, err)
	}
	if got := aws.ToInt64(head.ContentLength); got != sent {
		_ = s.Delete(context.WithoutCancel(ctx), key)
		return fmt.Errorf("put %s: stored object has %d bytes, %d were sent; deleted it", s.where(key), got, sent)
	}
	return nil
}

// abortUpload aborts one multipart upload. It runs even when ctx is
// cancelled (the usual reason an upload failed), bounded by 30 s.
func (s *S3) abortUpload(ctx context.Context, fullKey, uploadID string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket:   aws.String(s.bucket),
		Key:      aws.String(fullKey),
		UploadId: aws.String(uploadID),
	})
	if errorCode(err) == "NoSuchUpload" {
		return nil // already aborted (or completed) on the server
	}
	return err
}

// PutIfAbsent stores data with one PutObject carrying "If-None-Match: *"
// (S3 conditional writes), so the server refuses to replace an existing
// object: HTTP 412 PreconditionFailed, or 409 ConditionalRequestConflict
// when a concurrent write to the same key is in flight, both returned as
// ErrExists (callers wanting the key may retry after a conflict). When the
// object found holds exactly data, PutIfAbsent returns nil: a retried
// attempt (S3Options.RetryTimeout) met the object an earlier attempt of the
// same call stored before its response was lost. Callers must therefore
// put content no other writer can produce (the repository lock names its
// owner, host, process and time).
//
// Limitation: this is only as atomic as the server's conditional writes.
// AWS S3 (since 2024-08), MinIO and versitygw (v1.8.0, checked by this
// package's tests) honour If-None-Match; an older S3-compatible store may
// ignore the header and overwrite silently. No safe emulation exists on
// plain S3 (a HeadObject-then-PutObject check races), so run
// CheckConditionalWrites once against an unfamiliar store.
func (s *S3) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	out, err := s.client.PutObject(ctx, s.writes.putObject(key, &s3.PutObjectInput{
		Bucket:            aws.String(s.bucket),
		Key:               aws.String(s.fullKey(key)),
		Body:              bytes.NewReader(data),
		ContentLength:     aws.Int64(int64(len(data))),
		IfNoneMatch:       aws.String("*"),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	}))
	if err == nil {
		s.writes.confirm(key, out.ServerSideEncryption)
	}
	if err = s.mapError(ctx, "put-if-absent", key, err); errors.Is(err, ErrExists) && s.holds(ctx, key, data) {
		// An earlier attempt of this call stored the object and its
		// response was lost; the SDK's retry then met our own object.
		return nil
	}
	return err
}

// holds reports whether the object at key holds exactly data.
func (s *S3) holds(ctx context.Context, key string, data []byte) bool {
	rc, err := s.Get(ctx, key)
	if err != nil {
		return false
	}
	defer rc.Close()
	got, err := io.ReadAll(io.LimitReader(rc, int64(len(data))+1))
	return err == nil && bytes.Equal(got, data)
}

// CheckConditionalWrites verifies that the store honours If-None-Match:
// it writes a probe object under key with PutIfAbsent twice, expects the
// second to fail with ErrExists, and deletes the probe. It returns an
// error explaining the risk when the store ignores the condition.
func (s *S3) CheckConditionalWrites(ctx context.Context, key string) error {
	if err := s.PutIfAbsent(ctx, key, []byte("probe 1")); err != nil {
		return fmt.Errorf("check conditional writes: %w", err)
	}
	defer func() { _ = s.Delete(context.WithoutCancel(ctx), key) }() // best effort: a probe left behind is harmless
	err := s.PutIfAbsent(ctx, key, []byte("probe 2"))
	switch {
	case errors.Is(err, ErrExists):
		return nil
	case err == nil:
		return fmt.Errorf("check conditional writes: %s at %s ignored If-None-Match and overwrote an object; "+
			"PutIfAbsent (the repository lock) is not safe on this store", s.where(key), s.endpoint)
	default:
		return fmt.Errorf("check conditional writes: %w", err)
	}
}

// Get opens the object with GetObject (checksum mode enabled, so the SDK
// verifies a whole-object checksum while the body is read and the final
// Read fails on a mismatch). It returns ErrNotFound for a missing key.
// After a mismatch the object is read once more in full (see reread): the
// final Read fails with ErrCorrupt when the re-read mismatches too (the
// stored object is damaged), ErrTransient when it matches (a corruption
// in transit).
//
// A body that fails while it is read (connection reset or closed before
// the Content-Length, no byte for RequestTimeout) is resumed: a new
// GetObject with "Range: bytes=<bytes read>-" and "If-Match: <ETag>" (RFC
// 9110 §13.1.1; an object replaced meanwhile fails the read instead of
// mixing two versions), after a backoff, until RetryTimeout has passed
// since the first interruption. Resumed bytes are not checked against the
// stored checksum (S3 returns none for a range); the readers of this
// repository check every segment's SHA-256 and every manifest's content.
// When the budget is spent, Read fails with an error wrapping
// ErrTransient that names the object, the endpoint and the bytes read.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket:       aws.String(s.bucket),
		Key:          aws.String(s.fullKey(key)),
		ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		return nil, s.mapError(ctx, "get", key, err)
	}
	return &s3Body{s: s, ctx: ctx, key: key, body: out.Body, etag: aws.ToString(out.ETag), size: aws.ToInt64(out.ContentLength)}, nil
}

// s3Body is the body of one Get, resumed with range requests after a
// failure (see Get). Not safe for concurrent use, like any io.Reader.
type s3Body struct {
	s       *S3
	ctx     context.Context
	key     string
	body    io.ReadCloser
	etag    string
	size    int64 // the object's size, from the first response's Content-Length
	n       int64 // bytes returned so far
	failed  time.Time
	resumes int
	pending error // a read error held back while bytes were returned with it
	err     error // sticky final error
}

func (b *s3Body) Read(p []byte) (int, error) {
	for {
		if b.err != nil {
			return 0, b.err
		}
		var n int
		var err error
		if b.pending != nil {
			err, b.pending = b.pending, nil
		} else {
			n, err = b.body.Read(p)
			b.n += int64(n)
		}
		if err == io.EOF && b.n < b.size {
			err = errShortBody
		}
		if err == nil || err == io.EOF {
			return n, err
		}
		if n > 0 {
			b.pending = err
			return n, nil
		}
		if err := b.resume(err); err != nil {
			b.err = err
			return 0, err
		}
	}
}

// resume replaces the failed body with a range request from the bytes
// read, retrying within the budget, or returns the error to give up with.
func (b *s3Body) resume(cause error) error {
	s := b.s
	where := s.where(b.key)
	switch {
	case b.ctx.Err() != nil:
		return fmt.Errorf("read %s: %w", where, b.ctx.Err())
	case isChecksumMismatch(cause):
		return b.reread(cause)
	}
	if b.failed.IsZero() {
		b.failed = time.Now()
	}
	for {
		if elapsed := time.Since(b.failed); elapsed >= s.retry.retryTimeout {
			return markTransient(fmt.Errorf("read %s at %s: the download failed after %d of %d bytes and %d resumes: %w (gave up after retrying for %s; storage.retry_timeout is %s)",
				where, s.endpoint, b.n, b.size, b.resumes, cause, elapsed.Round(time.Millisecond), s.retry.retryTimeout))
		}
		b.resumes++
		if err := sleep(b.ctx, s.retry.backoff(b.resumes)); err != nil {
			return fmt.Errorf("read %s: %w", where, err)
		}
		b.body.Close()
		in := &s3.GetObjectInput{
			Bucket: aws.String(s.bucket),
			Key:    aws.String(s.fullKey(b.key)),
			Range:  aws.String(fmt.Sprintf("bytes=%d-", b.n)),
		}
		if b.etag != "" {
			in.IfMatch = aws.String(b.etag)
		}
		out, err := s.client.GetObject(b.ctx, in)
		if err == nil {
			b.body = out.Body
			return nil
		}
		err = s.mapError(b.ctx, "resume reading", b.key, err)
		if !IsTransient(err) {
			if errors.Is(err, ErrExists) || errors.Is(err, ErrNotFound) { // 412: the ETag no longer matches
				return fmt.Errorf("read %s: the object was replaced or deleted while it was read (after %d of %d bytes)", where, b.n, b.size)
			}
			return err
		}
		cause = err
		b.body = io.NopCloser(strings.NewReader(""))
	}
}

// reread tells a damaged object from a corruption in transit after the
// SDK found that the bytes read differ from the object's stored checksum
// (cause): it reads the whole object once more, checksum mode enabled.
// The same mismatch again is ErrCorrupt (the stored bytes are damaged); a
// re-read that matches means the first read was corrupted on the way, and
// the error is ErrTransient (the bytes already returned cannot be taken
// back, a re-run reads them whole). A re-read that fails otherwise
// returns that failure, mapped as any read.
func (b *s3Body) reread(cause error) error {
	s := b.s
	where := s.where(b.key)
	b.body.Close()
	b.body = io.NopCloser(strings.NewReader(""))
	in := &s3.GetObjectInput{
		Bucket:       aws.String(s.bucket),
		Key:          aws.String(s.fullKey(b.key)),
		ChecksumMode: types.ChecksumModeEnabled,
	}
	if b.etag != "" {
		in.IfMatch = aws.String(b.etag)
	}
	out, err := s.client.GetObject(b.ctx, in)
	if err != nil {
		err = s.mapError(b.ctx, "re-read", b.key, err)
		if errors.Is(err, ErrExists) || errors.Is(err, ErrNotFound) { // 412: the ETag no longer matches
			return fmt.Errorf("read %s: the object was replaced or deleted while it was read", where)
		}
		return err
	}
	n, err := io.Copy(io.Discard, out.Body)
	out.Body.Close()
	switch {
	case err == nil && aws.ToInt64(out.ContentLength) != b.size:
		return fmt.Errorf("read %s: the object was replaced while it was read (%d bytes, then %d)", where, b.size, aws.ToInt64(out.ContentLength))
	case err == nil:
		return markTransient(fmt.Errorf("read %s at %s: %w; a re-read matched the checksum: the bytes were corrupted in transit", where, s.endpoint, cause))
	case isChecksumMismatch(err):
		return &corruptError{fmt.Errorf("read %s: the stored object is damaged: %w (the same on a re-read of all %d bytes)", where, cause, n)}
	case b.ctx.Err() != nil:
		return fmt.Errorf("read %s: %w", where, b.ctx.Err())
	}
	return s.mapError(b.ctx, "re-read", b.key, err)
}

func (b *s3Body) Close() error { return b.body.Close() }

// Stat returns size and last-modified time from HeadObject, or ErrNotFound.
func (s *S3) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.fullKey(key)),
	})
	if err != nil {
		return ObjectInfo{}, s.mapError(ctx, "stat", key, err)
	}
	return ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// List pages through ListObjectsV2 (following continuation tokens until the
// last page, ListPageSize keys per page) and calls fn per object in the
// server's order, which S3 defines as UTF-8 byte order. Keys ending in '/'
// ("folder" markers made by consoles) are skipped.
func (s *S3) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if err := validatePrefix(prefix); err != nil {
		return err
	}
	in := &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix + prefix),
	}
	if s.pageSize > 0 {
		in.MaxKeys = aws.Int32(s.pageSize)
	}
	p := s3.NewListObjectsV2Paginator(s.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return s.mapError(ctx, "list", prefix, err)
		}
		// S3's ListBucketResult always names the bucket. A 200 answer
		// without it is not S3 (a web server, a proxy's page on a wrong
		// port): an empty listing would read as "no backups".
		if aws.ToString(page.Name) != s.bucket {
			return fmt.Errorf("list %s at %s: the answer is not an S3 bucket listing (it names bucket %q, want %q): check storage.endpoint (and storage.path_style)",
				s.where(prefix), s.endpoint, aws.ToString(page.Name), s.bucket)
		}
		for _, obj := range page.Contents {
			key := strings.TrimPrefix(aws.ToString(obj.Key), s.prefix)
			if key == "" || strings.HasSuffix(key, "/") {
				continue
			}
			info := ObjectInfo{Key: key, Size: aws.ToInt64(obj.Size), ModTime: aws.ToTime(obj.LastModified)}
			if err := fn(info); err != nil {
				return err
			}
		}
	}
	return nil
}

// Delete removes the object with DeleteObject; S3 reports success for
// absent keys, and so does Delete.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.fullKey(key)),
	})
	if rerr := s.retainedError(ctx, "delete", key, err); rerr != err {
		return rerr
	}
	if err = s.mapError(ctx, "delete", key, err); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// AbortStaleUploads aborts every incomplete multipart upload under the
// backend's prefix that was initiated more than olderThan ago, and returns
// how many it aborted (ListMultipartUploads, all pages, then
// AbortMultipartUpload each). Run it when a backup starts, with an age well
// above the longest expected Put (e.g. one hour), so that uploads of a
// killed earlier run stop costing storage without disturbing a concurrent
// writer. olderThan 0 aborts every upload under the prefix. On error it
// returns the count aborted so far.
func (s *S3) AbortStaleUploads(ctx context.Context, olderThan time.Duration) (int, error) {
	cutoff := time.Now().Add(-olderThan)
	p := s3.NewListMultipartUploadsPaginator(s.client, &s3.ListMultipartUploadsInput{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix),
	})
	n := 0
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return n, s.mapError(ctx, "list multipart uploads under", "", err)
		}
		for _, up := range page.Uploads {
			if olderThan > 0 && !aws.ToTime(up.Initiated).Before(cutoff) {
				continue
			}
			_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
				Bucket:   aws.String(s.bucket),
				Key:      up.Key,
				UploadId: up.UploadId,
			})
			if err != nil && errorCode(err) != "NoSuchUpload" {
				return n, fmt.Errorf("abort multipart upload %s of s3://%s/%s: %w", aws.ToString(up.UploadId), s.bucket, aws.ToString(up.Key), err)
			}
			if err == nil {
				n++
			}
		}
	}
	return n, nil
}

// errorCode returns the S3 error code of err ("NoSuchKey", "AccessDenied",
// ...), or "" if err carries none.
func errorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// mapError is the one place that interprets AWS error codes and HTTP
// statuses, and that tells transient failures (ErrTransient) from others. op names the operation ("get", "put", ...), key the object
// ("" for bucket-level calls). Missing objects become ErrNotFound, failed
// conditional writes ErrExists; bucket, permission, region, endpoint and
// credential problems get a message naming the bucket and endpoint and the
// likely fix. The original SDK error stays wrapped (errors.As works, and
// context.Canceled / DeadlineExceeded stay detectable with errors.Is).
func (s *S3) mapError(ctx context.Context, op, key string, err error) error {
	if err == nil {
		return nil
	}
	where := s.where(key)
	if key == "" {
		where += " at " + s.endpoint
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("%s %s: %w", op, where, err) // the caller's cancellation or deadline
	}
	code := errorCode(err)
	status := 0
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		status = respErr.HTTPStatusCode()
	}
	var be *budgetError
	if errors.As(err, &be) {
		err = be // the last attempt's error, with how long it was retried
	}
	bucketHint := func(hint string) error {
		return fmt.Errorf("%s %s: %s: %w", op, where, hint, err)
	}
	switch {
	case code == "NoSuchKey" || (key != "" && code == "NotFound"):
		return fmt.Errorf("%s %s: %w", op, where, ErrNotFound)
	case code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "ExpiredToken" || code == "InvalidToken" ||
		code == "XAdminUserNotFound": // versitygw's code, with status 404, for an access key id it does not know
		return bucketHint(fmt.Sprintf("the credentials were rejected by %s (%s); check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the profile, "+
			"and that they belong to this endpoint", s.endpoint, code))
	case code == "NoSuchBucket" || (key == "" && status == 404):
		// The SDK's text (request id, host id) stays out of the message:
		// the caller logs it at debug level (S3Options.Logger).
		msg := fmt.Sprintf("bucket %q does not exist (%s) at endpoint %s; create it or fix the bucket name "+
			"(for S3-compatible stores also check the endpoint and path-style addressing)", s.bucket, s3Cause(err, code, status), s.endpoint)
		if key != "" {
			msg = fmt.Sprintf("%s %s: %s", op, s.where(key), msg)
		}
		return &noSuchBucketError{msg: msg, err: err}
	case code == "PreconditionFailed" || code == "ConditionalRequestConflict" || status == 412:
		return fmt.Errorf("%s %s: %w", op, where, ErrExists)
	case code == "AccessDenied" || code == "Forbidden" || code == "AllAccessDisabled" || status == 403:
		// HEAD responses have no body, so a wrong secret key and a denying
		// bucket policy both arrive as a bare 403 "Forbidden".
		return bucketHint(fmt.Sprintf("access denied to bucket %q at %s; check that the credentials found by the AWS default chain "+
			"(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, web identity/IRSA, instance role) are valid for this endpoint "+
			"and belong to a principal the bucket policy allows", s.bucket, s.endpoint))
	case code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed" || code == "IncorrectEndpoint" || status == 301:
		return bucketHint(fmt.Sprintf("bucket %q is in another region or behind another endpoint; set the region (AWS_REGION or the storage region setting)", s.bucket))
	case code == "InvalidBucketName" || (key == "" && status == 400):
		return bucketHint(fmt.Sprintf("bucket name %q was rejected; S3 bucket names are 3-63 lowercase letters, digits, '.' and '-'", s.bucket))
	case status == 0 && isNetworkError(err) && key == "":
		return markTransient(bucketHint(fmt.Sprintf("cannot reach %s; check the endpoint URL and port, and set path-style addressing "+
			"for S3-compatible stores whose bucket sub-domains do not resolve", s.endpoint)))
	case isTransientS3(err, code, status):
		if key != "" {
			where += " at " + s.endpoint // a transient error names the endpoint
		}
		return markTransient(fmt.Errorf("%s %s: %w", op, where, err))
	case strings.Contains(err.Error(), "failed to retrieve credentials") || strings.Contains(err.Error(), "failed to refresh cached credentials"):
		// The SDK's chain (each provider it tried and why it failed, e.g.
		// "no EC2 IMDS role found, operation error ec2imds: GetMetadata")
		// stays out of the message: the caller logs it at debug level.
		return &noCredentialsError{err: err, msg: fmt.Sprintf("%s %s: no AWS credentials found (environment, shared config/credentials file, "+
			"web identity/IRSA, ECS/EC2 role were tried): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, "+
			"or give the pod a web identity (IRSA) or the instance a role (the chain tried: --log-level debug)", op, where)}
	}
	return fmt.Errorf("%s %s: %w", op, where, err)
}

// noSuchBucketError is mapError's error for a bucket that does not exist:
// its message is the project's own, without the SDK's; it wraps
// ErrNoSuchBucket and the SDK error (errors.As still reaches it).
type noSuchBucketError struct {
	msg string
	err error
}

func (e *noSuchBucketError) Error() string   { return e.msg }
func (e *noSuchBucketError) Unwrap() []error { return []error{ErrNoSuchBucket, e.err} }

// noCredentialsError is mapError's error when the default credential
// chain found none: the project's message, wrapping ErrNoCredentials and
// the SDK error (errors.As still reaches it).
type noCredentialsError struct {
	msg string
	err error
}

func (e *noCredentialsError) Error() string   { return e.msg }
func (e *noCredentialsError) Unwrap() []error { return []error{ErrNoCredentials, e.err} }

// s3Cause is "S3 <operation>: <status> <code>" of an SDK error, e.g.
// "S3 ListObjectsV2: 404 NoSuchBucket", without the request and host ids.
func s3Cause(err error, code string, status int) string {
	op := "request"
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		op = oe.OperationName
	}
	cause := "S3 " + op + ":"
	if status != 0 {
		cause += fmt.Sprintf(" %d", status)
	}
	if code != "" {
		cause += " " + code
	}
	return cause
}

// isTransientS3 reports whether an S3 error says nothing about the stored
// data: a network failure or timeout, HTTP 5xx or 429, or an S3 code that
// AWS documents as retryable (InternalError, SlowDown, ServiceUnavailable,
// RequestTimeout, RequestTimeTooSkewed is not: it needs a clock fix).
func isTransientS3(err error, code string, status int) bool {
	switch code {
	case "InternalError", "SlowDown", "ServiceUnavailable", "RequestTimeout", "Throttling", "ThrottlingException", "RequestLimitExceeded":
		return true
	}
	if status >= 500 || status == http.StatusTooManyRequests {
		return true
	}
	var netErr net.Error
	return status == 0 && (isNetworkError(err) || errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF))
}

// isNetworkError reports whether err is a failure to send the request
// (connection refused, unknown host, timeout).
func isNetworkError(err error) bool {
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var sendErr *smithyhttp.RequestSendError
	return errors.As(err, &opErr) || errors.As(err, &dnsErr) || errors.As(err, &sendErr)
}
