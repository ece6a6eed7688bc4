package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Server-side encryption algorithms (S3Options.ServerSideEncryption): the
// value of the x-amz-server-side-encryption header of PutObject and
// CreateMultipartUpload ("Specifying server-side encryption" in the S3
// User Guide; UploadPart takes none: a multipart upload is encrypted as
// its CreateMultipartUpload said).
const (
	// SSES3 is SSE-S3: S3-managed keys (AES-256).
	SSES3 = "AES256"
	// SSEKMS is SSE-KMS: keys in AWS KMS (S3Options.SSEKMSKeyID; the
	// account's aws/s3 key when empty).
	SSEKMS = "aws:kms"
)

// Object Lock retention modes (ObjectRetention.Mode): the value of the
// x-amz-object-lock-mode header ("Object Lock" in the S3 User Guide).
const (
	// RetentionGovernance forbids deleting or overwriting an object version
	// until its retain-until date, except for a principal allowed
	// s3:BypassGovernanceRetention who sends
	// x-amz-bypass-governance-retention: true (this tool never does).
	RetentionGovernance = "GOVERNANCE"
	// RetentionCompliance forbids it to everyone, the root user included;
	// the retain-until date can be extended, never shortened.
	RetentionCompliance = "COMPLIANCE"
)

// MaxRetentionPeriod is the longest ObjectRetention.Period: 100 years of
// 365 days (36 500 days, S3's limit on a bucket's default retention).
const MaxRetentionPeriod = 36500 * 24 * time.Hour

// ObjectRetention is the Object Lock retention S3 puts on the objects it
// writes under the keys S3Options.Retained selects. The zero value (Mode
// "") means none.
type ObjectRetention struct {
	// Mode is RetentionGovernance or RetentionCompliance.
	Mode string
	// Period is how long each object is retained: its retain-until date
	// (x-amz-object-lock-retain-until-date) is the time its PutObject or
	// CreateMultipartUpload is sent plus Period, to the second. More than
	// zero, at most MaxRetentionPeriod.
	Period time.Duration
}

// Retention is the Object Lock retention an object carries (Retention).
// The zero value means none.
type Retention struct {
	Mode  string    // RetentionGovernance or RetentionCompliance; "" none
	Until time.Time // the retain-until date
}

// Active reports whether the retention forbids deleting the object at now.
func (r Retention) Active(now time.Time) bool { return r.Mode != "" && r.Until.After(now) }

// ErrRetained is wrapped (by a *RetainedError) when the store refuses to
// delete or overwrite an object because its Object Lock retention has not
// ended. Test with errors.Is; errors.As gives the date.
var ErrRetained = errors.New("object is under Object Lock retention")

// ErrObjectLockDisabled is wrapped by NewS3's error when S3Options.Retention
// is set and the bucket does not have Object Lock enabled: nothing has been
// written. A configuration error, never transient.
var ErrObjectLockDisabled = errors.New("bucket does not have Object Lock enabled")

// errLockConfigDenied is wrapped when GetObjectLockConfiguration is denied.
var errLockConfigDenied = errors.New("access denied")

// RetainedError is the error of a Delete or Put refused under retention:
// Object names it (s3://bucket/key), Retention says until when.
type RetainedError struct {
	Op        string // "delete", "put"
	Key       string // the key given to Delete or Put
	Object    string // s3://bucket/prefix/key
	Retention Retention
}

func (e *RetainedError) Error() string {
	return fmt.Sprintf("%s %s: the object is under Object Lock retention (%s) until %s; the store refuses to delete or replace it before then",
		e.Op, e.Object, e.Retention.Mode, e.Retention.Until.UTC().Format(time.RFC3339))
}

func (e *RetainedError) Unwrap() error { return ErrRetained }

// RetentionReader is implemented by a Backend that can tell the Object Lock
// retention of an object (S3, and ReadOnly over it). A backend without it
// (a local directory) retains nothing.
type RetentionReader interface {
	// Retention returns the retention of the object under key: the zero
	// Retention when it has none or the store has no Object Lock, an error
	// wrapping ErrNotFound when no object exists under key.
	Retention(ctx context.Context, key string) (Retention, error)
}

var _ RetentionReader = (*S3)(nil)

// s3Writes is what NewS3 made of S3Options' encryption and retention
// settings, applied to every PutObject and CreateMultipartUpload.
type s3Writes struct {
	sse       types.ServerSideEncryption // "" sends no header
	kmsKeyID  string
	bucketKey bool
	retention ObjectRetention
	retained  func(key string) bool

	lockMu      sync.Mutex
	lockChecked bool
	lockEnabled bool

	// unconfirmed is set by the first write whose response did not
	// confirm the server-side encryption asked for (confirm).
	unconfirmed   atomic.Bool
	onUnconfirmed func(key string)
}

// confirm checks a write's response: with server-side encryption asked
// for and got "" (no x-amz-server-side-encryption in the answer: the store
// ignored the header, as versitygw does, and may store plaintext), it
// calls S3Options.OnSSEUnconfirmed once, with the first such key.
func (w *s3Writes) confirm(key string, got types.ServerSideEncryption) {
	if w.sse == "" || got != "" || !w.unconfirmed.CompareAndSwap(false, true) {
		return
	}
	if w.onUnconfirmed != nil {
		w.onUnconfirmed(key)
	}
}

// checkWrites validates S3Options' encryption and retention settings.
func checkWrites(opts S3Options) (*s3Writes, error) {
	w := &s3Writes{kmsKeyID: opts.SSEKMSKeyID, bucketKey: opts.SSEBucketKey, retention: opts.Retention, retained: opts.Retained, onUnconfirmed: opts.OnSSEUnconfirmed}
	switch opts.ServerSideEncryption {
	case "":
	case SSES3, SSEKMS:
		w.sse = types.ServerSideEncryption(opts.ServerSideEncryption)
	default:
		return nil, fmt.Errorf("s3 storage: server-side encryption %q is not %s (SSE-S3) or %s (SSE-KMS)", opts.ServerSideEncryption, SSES3, SSEKMS)
	}
	if opts.ServerSideEncryption != SSEKMS && (opts.SSEKMSKeyID != "" || opts.SSEBucketKey) {
		return nil, fmt.Errorf("s3 storage: a KMS key id and the bucket key apply to server-side encryption %s only, not %q", SSEKMS, opts.ServerSideEncryption)
	}
	r := opts.Retention
	switch r.Mode {
	case "":
		if r.Period != 0 {
			return nil, errors.New("s3 storage: a retention period without a retention mode (GOVERNANCE or COMPLIANCE)")
		}
	case RetentionGovernance, RetentionCompliance:
		if r.Period <= 0 || r.Period > MaxRetentionPeriod {
			return nil, fmt.Errorf("s3 storage: retention period %s is outside (0, 36500 days]", r.Period)
		}
		if opts.Retained == nil {
			return nil, errors.New("s3 storage: a retention without S3Options.Retained (which keys to retain)")
		}
	default:
		return nil, fmt.Errorf("s3 storage: retention mode %q is not %s or %s", r.Mode, RetentionGovernance, RetentionCompliance)
	}
	return w, nil
}

// lock returns the Object Lock headers of an object written now under key:
// ok false when it is not to be retained.
func (w *s3Writes) lock(key string) (types.ObjectLockMode, time.Time, bool) {
	if w.retention.Mode == "" || !w.retained(key) {
		return "", time.Time{}, false
	}
	return types.ObjectLockMode(w.retention.Mode), time.Now().Add(w.retention.Period).Truncate(time.Second), true
}

// putObject sets the encryption and retention fields of a PutObject of key.
func (w *s3Writes) putObject(key string, in *s3.PutObjectInput) *s3.PutObjectInput {
	in.ServerSideEncryption = w.sse
	if w.kmsKeyID != "" {
		in.SSEKMSKeyId = aws.String(w.kmsKeyID)
	}
	if w.bucketKey {
		in.BucketKeyEnabled = aws.Bool(true)
	}
	if mode, until, ok := w.lock(key); ok {
		in.ObjectLockMode, in.ObjectLockRetainUntilDate = mode, aws.Time(until)
	}
	return in
}

// createMultipart sets them on a CreateMultipartUpload of key.
func (w *s3Writes) createMultipart(key string, in *s3.CreateMultipartUploadInput) *s3.CreateMultipartUploadInput {
	in.ServerSideEncryption = w.sse
	if w.kmsKeyID != "" {
		in.SSEKMSKeyId = aws.String(w.kmsKeyID)
	}
	if w.bucketKey {
		in.BucketKeyEnabled = aws.Bool(true)
	}
	if mode, until, ok := w.lock(key); ok {
		in.ObjectLockMode, in.ObjectLockRetainUntilDate = mode, aws.Time(until)
	}
	return in
}

// checkObjectLock is NewS3's preflight when a retention is set: the bucket
// must have Object Lock enabled (GetObjectLockConfiguration), or every
// retained PutObject would fail with InvalidRequest after the lock and the
// progress manifest were written.
func (s *S3) checkObjectLock(ctx context.Context) error {
	enabled, err := s.objectLockEnabled(ctx)
	if err != nil {
		return err
	}
	if !enabled {
		return fmt.Errorf("%w: bucket %q at %s; storage.object_lock needs a bucket created with Object Lock "+
			"(aws s3api create-bucket --object-lock-enabled-for-bucket, or on a versioned bucket aws s3api put-object-lock-configuration "+
			"--object-lock-configuration ObjectLockEnabled=Enabled), or remove storage.object_lock; nothing was written",
			ErrObjectLockDisabled, s.bucket, s.endpoint)
	}
	return nil
}

// objectLockEnabled asks the bucket's Object Lock configuration once and
// remembers the answer.
func (s *S3) objectLockEnabled(ctx context.Context) (bool, error) {
	w := s.writes
	w.lockMu.Lock()
	defer w.lockMu.Unlock()
	if w.lockChecked {
		return w.lockEnabled, nil
	}
	out, err := s.client.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String(s.bucket)})
	switch code := errorCode(err); {
	case code == "ObjectLockConfigurationNotFoundError":
		w.lockChecked, w.lockEnabled = true, false
		return false, nil
	case err != nil && (code == "AccessDenied" || code == "Forbidden"):
		return false, fmt.Errorf("read the Object Lock configuration of bucket %q at %s: %w: "+
			"allow s3:GetBucketObjectLockConfiguration on the bucket (docs/OPERATIONS.md, \"Object Lock\"): %w", s.bucket, s.endpoint, errLockConfigDenied, err)
	case err != nil:
		return false, s.mapError(ctx, "read the Object Lock configuration of", "", err)
	}
	w.lockChecked = true
	w.lockEnabled = out.ObjectLockConfiguration != nil && out.ObjectLockConfiguration.ObjectLockEnabled == types.ObjectLockEnabledEnabled
	return w.lockEnabled, nil
}

// Retention returns the Object Lock retention of the object under key
// (GetObjectRetention; on a bucket without Object Lock, known from one
// GetObjectLockConfiguration per backend, no request per object): the zero
// Retention when it has none, ErrNotFound when the object is missing. A
// principal not allowed s3:GetBucketObjectLockConfiguration gets the zero
// Retention for every key (a retained object's Delete is still refused by
// the store). Needs s3:GetObjectRetention on a bucket with Object Lock.
func (s *S3) Retention(ctx context.Context, key string) (Retention, error) {
	if err := ValidateKey(key); err != nil {
		return Retention{}, err
	}
	enabled, err := s.objectLockEnabled(ctx)
	if errors.Is(err, errLockConfigDenied) {
		return Retention{}, nil
	}
	if err != nil || !enabled {
		return Retention{}, err
	}
	out, err := s.client.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: aws.String(s.bucket), Key: aws.String(s.fullKey(key))})
	if errorCode(err) == "NoSuchObjectLockConfiguration" {
		return Retention{}, nil // an object written without retention
	}
	if err != nil {
		return Retention{}, s.mapError(ctx, "read the retention of", key, err)
	}
	if out.Retention == nil {
		return Retention{}, nil
	}
	return Retention{Mode: string(out.Retention.Mode), Until: aws.ToTime(out.Retention.RetainUntilDate)}, nil
}

// retainedError turns a refusal (403 AccessDenied: what AWS S3 and
// versitygw answer to a delete or overwrite of a retained object version)
// into a *RetainedError when the object's retention is active; any other
// error, or one it cannot confirm, is returned as it is.
func (s *S3) retainedError(ctx context.Context, op, key string, err error) error {
	if code := errorCode(err); code != "AccessDenied" && code != "Forbidden" {
		return err
	}
	r, rerr := s.Retention(ctx, key)
	if rerr != nil || !r.Active(time.Now()) {
		return err
	}
	return &RetainedError{Op: op, Key: key, Object: s.where(key), Retention: r}
}
