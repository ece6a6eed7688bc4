package testkit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Server is a running S3-compatible server (versitygw with its posix
// backend) started by StartS3 for one test. The zero value is not useful.
type S3Server struct {
	Endpoint  string // base URL, e.g. "http://127.0.0.1:39123"; use path-style addressing
	Bucket    string // a bucket created empty for this test
	AccessKey string // random root access key, the same for every server of this test binary
	SecretKey string // random root secret key, the same for every server of this test binary
	Region    string // signing region the server expects, "us-east-1"
	Dir       string // the posix root directory; each bucket is a sub-directory
}

// s3ToolHint tells a developer how to get the versitygw binary.
const s3ToolHint = "run `make tools` to build versitygw into $HOME/.cache/kdr-tools/bin, or set KDR_VERSITYGW to its path"

// S3BinaryPath returns the path of the versitygw binary: $KDR_VERSITYGW if
// set, else "versitygw" on $PATH, else $HOME/.cache/kdr-tools/bin/versitygw.
// It returns an error naming every place it looked when none exists.
func S3BinaryPath() (string, error) {
	if p := os.Getenv("KDR_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("KDR_VERSITYGW=%s: %w", p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	var cached string
	if home, err := os.UserHomeDir(); err == nil {
		cached = filepath.Join(home, ".cache", "kdr-tools", "bin", "versitygw")
		if _, err := os.Stat(cached); err == nil {
			return cached, nil
		}
	}
	return "", fmt.Errorf("versitygw not found (looked at $KDR_VERSITYGW, $PATH and %s)", cached)
}

// StartS3 starts a versitygw S3 server on a free loopback port, serving a
// fresh temporary directory with random root credentials (made once per
// test binary and shared by its servers, so that SetS3ProcessEnv can give
// them all to the AWS chain at once), creates an empty bucket and returns
// once the server answers. t.Cleanup stops the server.
//
// When the binary is missing the test is skipped, or fails if the
// environment variable KDR_REQUIRE_TOOLS=1 (CI sets it so that a missing
// tool cannot silently skip the S3 tests).
func StartS3(t *testing.T) S3Server {
	t.Helper()
	bin, err := S3BinaryPath()
	if err != nil {
		if os.Getenv("KDR_REQUIRE_TOOLS") == "1" {
			t.Fatalf("%v; %s", err, s3ToolHint)
		}
		t.Skipf("skipping S3 test: %v; %s", err, s3ToolHint)
	}

	srv, stop, out, err := launchS3(bin, t.TempDir())
	if err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() && out.Len() > 0 {
			t.Logf("versitygw output:\n%s", out.String())
		}
	})
	srv.CreateBucket(t, srv.Bucket)
	return srv
}

// LaunchS3 starts the server StartS3 starts, for a program that is not a
// test (the benchmark harness, internal/bench): versitygw (S3BinaryPath)
// serving dir, with random root credentials and one empty bucket
// (srv.Bucket); dir is created when missing. A failure is returned as an
// error. The caller must call
// stop on every exit path (SIGTERM, then SIGKILL after 5 s); it leaves dir
// for its owner to remove.
func LaunchS3(ctx context.Context, dir string) (srv S3Server, stop func(), err error) {
	bin, err := S3BinaryPath()
	if err != nil {
		return S3Server{}, nil, fmt.Errorf("%w; %s", err, s3ToolHint)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return S3Server{}, nil, err
	}
	srv, stop, _, err = launchS3(bin, dir)
	if err != nil {
		return S3Server{}, nil, fmt.Errorf("start versitygw: %w", err)
	}
	if _, err := srv.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(srv.Bucket)}); err != nil {
		stop()
		return S3Server{}, nil, fmt.Errorf("create bucket %q on %s: %w", srv.Bucket, srv.Endpoint, err)
	}
	return srv, stop, nil
}

// launchS3 is StartS3's and LaunchS3's one start of versitygw serving dir,
// without a bucket yet. The free port can be taken between picking and
// binding it: it retries a few times.
func launchS3(bin, dir string) (S3Server, func(), *s3SyncBuffer, error) {
	access, secret := s3Credentials() // one pair per process: SetS3ProcessEnv
	srv := S3Server{
		AccessKey: access,
		SecretKey: secret,
		Region:    "us-east-1",
		Bucket:    "kdr-test-" + s3RandomHex(4),
		Dir:       dir,
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := s3FreePort()
		if err != nil {
			return S3Server{}, nil, nil, fmt.Errorf("pick a free port for versitygw: %w", err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		srv.Endpoint = "http://" + addr
		stop, out, err := s3Run(bin, addr, srv)
		if err == nil {
			return srv, stop, out, nil
		}
		lastErr = err
	}
	return S3Server{}, nil, nil, lastErr
}

// s3Run starts versitygw listening on addr and waits until it answers
// signed requests; it returns the function that stops it and its output.
// On failure the process is stopped and its output is part of the error.
func s3Run(bin, addr string, srv S3Server) (func(), *s3SyncBuffer, error) {
	cmd := exec.Command(bin, "--quiet", "--port", addr, "posix", srv.Dir)
	cmd.Env = append(os.Environ(),
		"ROOT_ACCESS_KEY="+srv.AccessKey,
		"ROOT_SECRET_KEY="+srv.SecretKey,
		"VGW_REGION="+srv.Region,
	)
	out := &s3SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		})
	}

	client := srv.Client()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := client.ListBuckets(ctx, &s3.ListBucketsInput{})
		cancel()
		if err == nil {
			break
		}
		select {
		case werr := <-exited:
			return nil, nil, fmt.Errorf("versitygw on %s exited (%v) before answering; output:\n%s", addr, werr, out.String())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("versitygw on %s did not answer within 20s (last error: %v); output:\n%s", addr, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return stop, out, nil
}

// Client returns an S3 client for this server with static credentials and
// path-style addressing, independent of the code under test (for setting up
// and inspecting state).
func (s S3Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// CreateBucket creates another empty bucket on the server.
func (s S3Server) CreateBucket(t *testing.T, name string) {
	t.Helper()
	_, err := s.Client().CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(name)})
	if err != nil {
		t.Fatalf("create bucket %q on %s: %v", name, s.Endpoint, err)
	}
}

// Env returns the environment variables through which the AWS SDK's
// default credential chain finds this server's credentials and region:
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION (for child processes).
func (s S3Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=" + s.Region,
	}
}

// SetEnv sets Env in this process with t.Setenv (so the test must not be
// parallel), and clears AWS_SESSION_TOKEN, AWS_PROFILE and AWS_ENDPOINT_URL
// so a developer's own AWS settings cannot leak into the test. When the
// process environment already is what SetS3ProcessEnv set (a TestMain
// called it, and no test has changed it since), it does nothing: the test
// may then be parallel.
func (s S3Server) SetEnv(t *testing.T) {
	t.Helper()
	if s3ProcessEnvHolds(s) {
		return
	}
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	for _, k := range []string{"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	// Do not read the developer's ~/.aws files.
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(s.Dir, ".no-aws-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(s.Dir, ".no-aws-credentials"))
}

// s3RootEnv carries s3Credentials to a test binary's subprocesses (a
// helper process running the test binary again runs its TestMain, whose
// SetS3ProcessEnv must keep the parent's credentials): "access:secret".
const s3RootEnv = "KDR_TESTKIT_S3_ROOT"

// s3Credentials returns the root access key and secret key of every
// server StartS3 starts in this process: the parent test binary's
// ($KDR_TESTKIT_S3_ROOT), else random, made on first use.
var s3Credentials = sync.OnceValues(func() (string, string) {
	if access, secret, ok := strings.Cut(os.Getenv(s3RootEnv), ":"); ok && access != "" && secret != "" {
		return access, secret
	}
	b := make([]byte, 26)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("testkit: random S3 credentials: %v", err))
	}
	return "kdrtest" + hex.EncodeToString(b[:6]), hex.EncodeToString(b[6:])
})

// s3ProcessAWSFiles is where SetS3ProcessEnv points AWS_CONFIG_FILE and
// AWS_SHARED_CREDENTIALS_FILE: files that do not exist, so that a
// developer's ~/.aws files are not read.
var s3ProcessAWSFiles = sync.OnceValue(func() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return filepath.Join(os.TempDir(), "kdr-testkit-no-aws-"+hex.EncodeToString(b))
})

// s3ProcessVars are the variables SetS3ProcessEnv sets ("" means unset).
func s3ProcessVars() map[string]string {
	access, secret := s3Credentials()
	dir := s3ProcessAWSFiles()
	return map[string]string{
		"AWS_ACCESS_KEY_ID":           access,
		"AWS_SECRET_ACCESS_KEY":       secret,
		"AWS_REGION":                  "us-east-1",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_ENDPOINT_URL":            "",
		"AWS_ENDPOINT_URL_S3":         "",
		s3RootEnv:                     access + ":" + secret,
	}
}

// MainWithS3ProcessEnv is a TestMain for packages whose S3 tests run in
// parallel: it calls SetS3ProcessEnv, then m.Run, and exits with its code
// (1 when the environment cannot be set).
func MainWithS3ProcessEnv(m *testing.M) {
	if err := SetS3ProcessEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// SetS3ProcessEnv sets, for the whole test binary, the AWS variables
// through which the AWS SDK's default credential chain reaches every server
// StartS3 starts: the shared root credentials, AWS_REGION us-east-1, no
// session token, profile or endpoint override, and AWS_CONFIG_FILE and
// AWS_SHARED_CREDENTIALS_FILE naming files that do not exist. Call it from
// TestMain before m.Run; S3Server.SetEnv then sets nothing, and tests that
// call it may be parallel (t.Setenv forbids t.Parallel). A test that
// t.Setenv's one of these variables itself still works: the environment no
// longer holds, so SetEnv falls back to t.Setenv (that test must not be
// parallel), and testing restores the variable when the test ends.
func SetS3ProcessEnv() error {
	for k, v := range s3ProcessVars() {
		var err error
		if v == "" {
			err = os.Unsetenv(k)
		} else {
			err = os.Setenv(k, v)
		}
		if err != nil {
			return fmt.Errorf("set %s: %w", k, err)
		}
	}
	return nil
}

// s3ProcessEnvHolds reports whether the process environment is what
// SetS3ProcessEnv set, and s is a server of this process.
func s3ProcessEnvHolds(s S3Server) bool {
	if access, secret := s3Credentials(); s.AccessKey != access || s.SecretKey != secret || s.Region != "us-east-1" {
		return false
	}
	for k, want := range s3ProcessVars() {
		got, ok := os.LookupEnv(k)
		if want == "" && ok || want != "" && got != want {
			return false
		}
	}
	return true
}

func s3FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// s3RandomHex returns n random bytes in hex (crypto/rand.Read never fails).
func s3RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// s3SyncBuffer collects the server's output from its two pipes.
type s3SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *s3SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *s3SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *s3SyncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}
