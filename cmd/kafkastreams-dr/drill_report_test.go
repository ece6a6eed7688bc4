package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
)

// TestDrillReportHoldsNoSecret: the HTML report of a drill whose source
// needs a SASL password (from the environment, through the config) and
// that pushes to a Pushgateway URL with a password holds neither password:
// its command line has the config file's path, never its contents, and the
// URL with its password replaced. Its text names the flags as given.
func TestDrillReportHoldsNoSecret(t *testing.T) {
	const (
		password     = "kdr-Sasl-Pa55-drill-9d2e"
		pushPassword = "kdr-Push-Pa55-drill-4c1b"
	)
	src := testkit.StartKfake(t, 1, kfake.EnableSASL(), kfake.Superuser("PLAIN", "backup", password))
	cl := testkit.Client(t, src.Addrs(), kgo.SASL(plain.Auth{User: "backup", Pass: password}.AsMechanism()), kgo.DefaultProduceTopic("orders"))
	seedOrders(t, cl)
	target := testkit.StartKfake(t, 1)
	t.Setenv("KDR_TEST_SASL_PASSWORD", password)
	gw, _ := startPushRecorder(t, http.StatusOK)
	gwURL := strings.Replace(gw.URL, "http://", "http://pusher:"+pushPassword+"@", 1)
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source:
  bootstrap_servers: [%s]
  security:
    sasl:
      mechanism: PLAIN
      username: backup
      password: ${KDR_TEST_SASL_PASSWORD}
  topics:
    include: [orders]
target:
  bootstrap_servers: [%s]
storage:
  backend: filesystem
  path: %s
`, src.Bootstrap(), target.Bootstrap(), t.TempDir()))
	report := filepath.Join(t.TempDir(), "drill.html")
	code, stdout, stderr := runCLI(t, "--log-level", "error", "--push-gateway", gwURL, "drill", "-c", cfg, "--report", report)
	if code != exitOK {
		t.Fatalf("drill: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{password, pushPassword} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the HTML report holds the secret %q", secret)
		}
	}
	p := testkit.ParseReportPage(t, string(b))
	want := "kafkastreams-dr --log-level error --push-gateway " + strings.Replace(gw.URL, "http://", "http://pusher:xxxxx@", 1) + " drill --config " + cfg + " --report " + report
	if !strings.Contains(p.Text, want) || p.Outcome != "passed" {
		t.Errorf("the report's command line is not %q (outcome %q):\n%s", want, p.Outcome, p.Text)
	}
}
