package main

import (
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestNoSecretInDrillJUnitOrMetrics extends TestNoSecretInOutput to the
// outputs it left out (issue 14): the JUnit XML a drill writes and the
// /metrics endpoint --metrics-addr serves, scraped while the drill runs.
// The drill backs up a SASL PLAIN kfake source to S3 (versitygw, its
// access key and secret in the environment) and restores into a SASL PLAIN
// kfake target, at --log-level debug, with --json and a Pushgateway URL
// holding a password: once passing, once failing in its restore phase (a
// wrong target password; the JUnit failure holds the error). No secret
// (the two passwords, the wrong one, the AWS keys, the Pushgateway
// password) may appear in stdout, stderr, the JUnit file, any scrape or
// any pushed body, or any object of the repository; the scrapes must have answered during the run, and the
// failing JUnit must hold the failure, or the test shows nothing.
func TestNoSecretInDrillJUnitOrMetrics(t *testing.T) {
	const (
		sourcePassword = "kdr-Source-Pa55-3e8d1a"
		targetPassword = "kdr-Target-Pa55-9c4b7f"
		wrongPassword  = "kdr-Wrong-Pa55-6a2e0c"
		pushPassword   = "kdr-Push-Pa55-d4c3b2"
	)
	srv := testkit.StartS3(t)
	srv.SetEnv(t)
	secrets := []string{sourcePassword, targetPassword, wrongPassword, pushPassword, srv.AccessKey, srv.SecretKey}
	t.Setenv("KDR_TEST_SOURCE_PASSWORD", sourcePassword)
	t.Setenv("KDR_TEST_TARGET_PASSWORD", targetPassword)
	t.Setenv("KDR_TEST_WRONG_PASSWORD", wrongPassword)

	src := testkit.StartKfake(t, 3, kfake.EnableSASL(), kfake.Superuser("PLAIN", "backup", sourcePassword))
	if err := sample.Seed(t.Context(), testkit.Client(t, src.Addrs(), kgo.SASL(plain.Auth{User: "backup", Pass: sourcePassword}.AsMechanism()))); err != nil {
		t.Fatal(err)
	}
	// The Pushgateway keeps every body it is sent.
	var mu sync.Mutex
	var pushed []string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		pushed = append(pushed, r.URL.String()+"\n"+string(b))
		mu.Unlock()
	}))
	t.Cleanup(gw.Close)
	gwURL := strings.Replace(gw.URL, "http://", "http://pusher:"+pushPassword+"@", 1)

	for _, tc := range []struct {
		name, targetPassword string
		code                 int
	}{
		{"drill passes", "${KDR_TEST_TARGET_PASSWORD}", exitOK},
		{"restore phase fails on a wrong target password", "${KDR_TEST_WRONG_PASSWORD}", exitError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := testkit.StartKfake(t, 3, kfake.EnableSASL(), kfake.Superuser("PLAIN", "restore", targetPassword))
			prefix := fmt.Sprintf("drill-%d", time.Now().UnixNano())
			cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: %s
source_changelog_topics: [%s]
source:
  bootstrap_servers: [%s]
  security:
    sasl:
      mechanism: PLAIN
      username: backup
      password: ${KDR_TEST_SOURCE_PASSWORD}
  topics:
    include: ["%s"]
target:
  bootstrap_servers: [%s]
  retry_timeout: 2s
  security:
    sasl:
      mechanism: PLAIN
      username: restore
      password: %s
storage:
  backend: s3
  bucket: %s
  prefix: %s
  region: %s
  endpoint: %s
  path_style: true
`, sample.AppID, strings.Join(sample.SourceChangelogs, ", "), strings.Join(src.Addrs(), ", "), strings.Join(sample.Include, `", "`),
				strings.Join(target.Addrs(), ", "), tc.targetPassword, srv.Bucket, prefix, srv.Region, srv.Endpoint))
			junit := filepath.Join(t.TempDir(), "drill-junit.xml")
			ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()

			// Scrape /metrics until the drill ends.
			stop := make(chan struct{})
			var scrapes []string
			var scraped sync.WaitGroup
			scraped.Go(func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					resp, err := http.Get("http://" + addr + "/metrics")
					if err != nil {
						continue // not serving yet, or no longer
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						scrapes = append(scrapes, string(b))
					}
				}
			})
			code, stdout, stderr := runCLI(t, "--log-level", "debug", "--metrics-addr", addr, "--push-gateway", gwURL,
				"drill", "-c", cfg, "--junit", junit, "--json")
			close(stop)
			scraped.Wait()
			if code != tc.code {
				t.Errorf("drill: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			xml, err := os.ReadFile(junit)
			if err != nil {
				t.Fatalf("the drill wrote no JUnit file: %v", err)
			}
			mu.Lock()
			outputs := map[string]string{"stdout": stdout, "stderr": stderr, "the JUnit file": string(xml), "the pushed bodies": strings.Join(pushed, "\n")}
			mu.Unlock()
			for i, s := range scrapes {
				outputs[fmt.Sprintf("scrape %d of /metrics", i+1)] = s
			}
			// And every object the drill wrote (versitygw's posix tree).
			objects := 0
			err = filepath.WalkDir(filepath.Join(srv.Dir, srv.Bucket, prefix), func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				outputs["object "+p] = string(b)
				objects++
				return err
			})
			if err != nil || objects == 0 {
				t.Errorf("the drill's repository: %d objects (%v)", objects, err)
			}
			for _, secret := range secrets {
				for what, out := range outputs {
					if strings.Contains(out, secret) {
						t.Errorf("%s holds the secret %q:\n%s", what, secret, out)
					}
				}
			}
			// What shows the test saw the outputs it checks.
			if len(scrapes) == 0 || !strings.Contains(scrapes[len(scrapes)-1], "kafkastreams_dr_") {
				t.Errorf("%d scrapes of /metrics during the drill, the last without kafkastreams_dr_ metrics: the test shows nothing", len(scrapes))
			}
			if !strings.Contains(stderr, `"msg":"opening connection to broker"`) {
				t.Errorf("no franz-go debug log: the test shows nothing\n%s", stderr)
			}
			s := readJUnit(t, junit)
			if tc.code == exitOK && (s.Failures != 0 || s.Tests == 0) {
				t.Errorf("JUnit of the passing drill: %+v", s)
			}
			// kfake answers a wrong SASL password by closing the
			// connection: the failure names the target that did not answer.
			if tc.code != exitOK && (s.Failures != 1 || !strings.Contains(string(xml), "target cluster "+target.Bootstrap())) {
				t.Errorf("JUnit of the failing drill does not hold its failure naming the target: %s", xml)
			}
			t.Logf("%s: exit %d, %d bytes of stdout, %d of stderr, %d of JUnit, %d scrapes, %d pushes, %d repository objects: no secret", tc.name, code, len(stdout), len(stderr), len(xml), len(scrapes), len(pushed), objects)
		})
	}
}
