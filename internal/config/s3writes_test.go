package config

import (
	"strings"
	"testing"
	"time"
)

// TestServerSideEncryptionAndObjectLock: storage.server_side_encryption
// and storage.object_lock are parsed into what storage.S3Options takes, and
// each bad value is refused naming its key, its line and the fix (exit 2 in
// the commands, as every config error).
func TestServerSideEncryptionAndObjectLock(t *testing.T) {
	s3 := strings.Replace(base, "  backend: filesystem\n  path: /backups\n", "  backend: s3\n  bucket: kafka-backups\n", 1)
	// Lines: storage is line 6, the first added key is line 9.
	tests := []struct {
		name    string
		yaml    string
		check   func(t *testing.T, c *Config)
		wantErr []string
		notErr  []string // what the error must not say
	}{
		{name: "absent: nothing asked", yaml: s3, check: func(t *testing.T, c *Config) {
			if c.Storage.ServerSideEncryption != (ServerSideEncryption{}) || c.Storage.ObjectLock != (ObjectLock{}) {
				t.Errorf("storage %+v, want no encryption and no object lock", c.Storage)
			}
			if p, err := c.Storage.ObjectLock.Period(); p != 0 || err != nil {
				t.Errorf("Period() = %s, %v; want 0", p, err)
			}
		}},
		{name: "SSE-S3", yaml: s3 + "  server_side_encryption:\n    algorithm: AES256\n", check: func(t *testing.T, c *Config) {
			if c.Storage.ServerSideEncryption != (ServerSideEncryption{Algorithm: "AES256"}) {
				t.Errorf("server_side_encryption %+v", c.Storage.ServerSideEncryption)
			}
		}},
		{name: "SSE-KMS with a key and a bucket key", yaml: s3 + "  server_side_encryption:\n    algorithm: aws:kms\n    kms_key_id: alias/backups\n    bucket_key: true\n",
			check: func(t *testing.T, c *Config) {
				if c.Storage.ServerSideEncryption != (ServerSideEncryption{Algorithm: "aws:kms", KMSKeyID: "alias/backups", BucketKey: true}) {
					t.Errorf("server_side_encryption %+v", c.Storage.ServerSideEncryption)
				}
			}},
		{name: "object lock in days, mode upper-cased", yaml: s3 + "  object_lock:\n    mode: compliance\n    retention: 30d\n", check: func(t *testing.T, c *Config) {
			p, err := c.Storage.ObjectLock.Period()
			if c.Storage.ObjectLock.Mode != "COMPLIANCE" || p != 30*24*time.Hour || err != nil {
				t.Errorf("object_lock %+v, period %s, %v; want COMPLIANCE for 720h", c.Storage.ObjectLock, p, err)
			}
		}},
		{name: "object lock in hours", yaml: s3 + "  object_lock:\n    mode: GOVERNANCE\n    retention: 36h\n", check: func(t *testing.T, c *Config) {
			if p, _ := c.Storage.ObjectLock.Period(); p != 36*time.Hour {
				t.Errorf("period %s, want 36h", p)
			}
		}},
		{name: "an unknown algorithm", yaml: s3 + "  server_side_encryption:\n    algorithm: SSE-KMS\n",
			wantErr: []string{`storage.server_side_encryption.algorithm "SSE-KMS" is not AES256 (SSE-S3) or aws:kms (SSE-KMS) (did you mean aws:kms?)`, "line 10"}},
		{name: "an unknown algorithm with KMS settings: one problem", yaml: s3 + "  server_side_encryption:\n    algorithm: kms\n    kms_key_id: alias/backups\n    bucket_key: true\n",
			wantErr: []string{`storage.server_side_encryption.algorithm "kms" is not AES256 (SSE-S3) or aws:kms (SSE-KMS) (did you mean aws:kms?) (line 10)`},
			notErr:  []string{"kms_key_id applies", "bucket_key applies"}},
		{name: "a lower-case AES256", yaml: s3 + "  server_side_encryption:\n    algorithm: aes256\n",
			wantErr: []string{`"aes256" is not AES256`, "did you mean AES256?", "line 10"}},
		{name: "no algorithm", yaml: s3 + "  server_side_encryption:\n    kms_key_id: k\n",
			wantErr: []string{"storage.server_side_encryption.algorithm is required: AES256 (SSE-S3) or aws:kms (SSE-KMS)", "line 9",
				`storage.server_side_encryption.kms_key_id applies to algorithm aws:kms (SSE-KMS) only, and the algorithm is ""`}},
		{name: "a KMS key id with SSE-S3", yaml: s3 + "  server_side_encryption:\n    algorithm: AES256\n    kms_key_id: alias/backups\n",
			wantErr: []string{`storage.server_side_encryption.kms_key_id applies to algorithm aws:kms (SSE-KMS) only, and the algorithm is "AES256": set storage.server_side_encryption.algorithm: aws:kms, or remove kms_key_id`, "line 11"}},
		{name: "a bucket key with SSE-S3", yaml: s3 + "  server_side_encryption:\n    algorithm: AES256\n    bucket_key: true\n",
			wantErr: []string{"storage.server_side_encryption.bucket_key applies to algorithm aws:kms (SSE-KMS) only", "line 11"}},
		{name: "an unknown mode", yaml: s3 + "  object_lock:\n    mode: LEGAL_HOLD\n    retention: 30d\n",
			wantErr: []string{`storage.object_lock.mode "LEGAL_HOLD" is not GOVERNANCE or COMPLIANCE`, "line 10"}},
		{name: "no mode", yaml: s3 + "  object_lock:\n    retention: 30d\n",
			wantErr: []string{"storage.object_lock.mode is required: GOVERNANCE or COMPLIANCE", "line 9"}},
		{name: "no retention", yaml: s3 + "  object_lock:\n    mode: GOVERNANCE\n",
			wantErr: []string{"storage.object_lock.retention is required", "line 9"}},
		{name: "months are not a unit", yaml: s3 + "  object_lock:\n    mode: GOVERNANCE\n    retention: 1m\n",
			wantErr: []string{`storage.object_lock.retention "1m" is neither whole days (30d) nor whole hours (36h)`, "line 11"}},
		{name: "minutes are not a unit", yaml: s3 + "  object_lock:\n    mode: GOVERNANCE\n    retention: 90m\n",
			wantErr: []string{`"90m" is neither whole days (30d) nor whole hours (36h)`, "line 11"}},
		{name: "zero days", yaml: s3 + "  object_lock:\n    mode: GOVERNANCE\n    retention: 0d\n",
			wantErr: []string{`storage.object_lock.retention "0d" is not greater than zero`, "line 11"}},
		{name: "above 100 years", yaml: s3 + "  object_lock:\n    mode: COMPLIANCE\n    retention: 36501d\n",
			wantErr: []string{`"36501d" is above S3's limit of 36500d (100 years)`, "line 11"}},
		{name: "object lock on a filesystem repository", yaml: base + "  object_lock:\n    mode: COMPLIANCE\n    retention: 30d\n",
			wantErr: []string{"storage.object_lock applies to the s3 backend only", "line 9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "t.yaml")
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Parse succeeded, want an error with %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q\ndoes not contain %q", err, w)
					}
				}
				for _, w := range tt.notErr {
					if strings.Contains(err.Error(), w) {
						t.Errorf("error %q\nsays %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
	c, err := Parse([]byte(base+"  server_side_encryption:\n    algorithm: AES256\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, "storage.server_side_encryption does not apply to the filesystem backend") {
		t.Errorf("warnings %q do not say that the filesystem backend ignores server_side_encryption", w)
	}
}
