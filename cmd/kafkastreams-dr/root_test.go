package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

func TestOpenStorageFilesystemErrorsNameStoragePath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(dir, "read-only")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		s        config.Storage
		want     string
		needUser bool // root may write anywhere
	}{
		{"path is a file", config.Storage{Backend: "filesystem", Path: file},
			"storage.path " + file + ": not a directory", false},
		{"path under a file", config.Storage{Backend: "filesystem", Path: file + "/repo"},
			"storage.path " + file + "/repo: " + file + " is not a directory", false},
		{"prefix is a file", config.Storage{Backend: "filesystem", Path: dir, Prefix: "file"},
			"storage.path " + dir + " (storage.prefix file): " + file + " is not a directory", false},
		{"path cannot be created", config.Storage{Backend: "filesystem", Path: readOnly + "/repo"},
			"storage.path " + readOnly + "/repo: cannot create " + readOnly + "/repo: permission denied", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needUser && os.Geteuid() == 0 {
				t.Skip("root can create directories anywhere")
			}
			_, err := openStorage(t.Context(), tt.s)
			if err == nil || err.Error() != tt.want {
				t.Errorf("err = %v\nwant   %s", err, tt.want)
			}
		})
	}
}

func TestOpenStorageS3ErrorsNameBucketAndEndpoint(t *testing.T) {
	t.Parallel()
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	tests := []struct {
		name string
		s    config.Storage
		want []string
	}{
		{"bucket does not exist", config.Storage{Backend: "s3", Bucket: "no-such-bucket", Endpoint: srv.Endpoint, PathStyle: true},
			[]string{`bucket "no-such-bucket" does not exist (S3 ListObjectsV2: 404 NoSuchBucket) at endpoint ` + srv.Endpoint}},
		// A retry_timeout of 2s, not the default 2m: the message is the same,
		// the test does not wait two minutes for it.
		{"endpoint unreachable", config.Storage{Backend: "s3", Bucket: srv.Bucket, Endpoint: "http://127.0.0.1:1", PathStyle: true, RetryTimeout: 2 * time.Second},
			[]string{"s3://" + srv.Bucket, "cannot reach http://127.0.0.1:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := openStorage(t.Context(), tt.s)
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

// TestOpenStorageS3UploadBufferBytes: storage.upload_buffer_bytes reaches
// the S3 backend's part buffer pool (rounded down to whole 8 MiB parts);
// absent, the storage default of 48 MiB.
func TestOpenStorageS3UploadBufferBytes(t *testing.T) {
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	for _, tt := range []struct {
		name string
		set  config.ByteSize
		want int64
	}{
		{"absent", 0, storage.DefaultS3UploadBufferBytes},
		{"16MiB", 16 << 20, 16 << 20},
		{"20MiB is two parts", 20 << 20, 16 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := openStorage(t.Context(), config.Storage{Backend: "s3", Bucket: srv.Bucket, Endpoint: srv.Endpoint, PathStyle: true, UploadBufferBytes: tt.set})
			if err != nil {
				t.Fatal(err)
			}
			// openStorage wraps every backend in storage.Encrypt (which
			// writes plaintext without storage.encryption).
			if w, ok := b.(interface{ Unwrap() storage.Backend }); ok {
				b = w.Unwrap()
			}
			s3, ok := b.(*storage.S3)
			if !ok {
				t.Fatalf("openStorage returned a %T, want *storage.S3 (under the encryption wrapper)", b)
			}
			if got := s3.UploadBufferBytes(); got != tt.want {
				t.Errorf("upload buffer of %d bytes, want %d", got, tt.want)
			}
		})
	}
}
