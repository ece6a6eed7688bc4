package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// TestDescribeNamesTheConfigsKeptAtTheirDefaults is a new user's doc
// fault: describe's configs heading said "every config not at its
// default", and then listed configs at their defaults (the backup records
// cleanup.policy, max.message.bytes, min.insync.replicas,
// message.timestamp.type and retention.ms whatever their source,
// docs/DOMAIN.md#field-case-08). Every config describe shows from the
// broker's DEFAULT_CONFIG is named by the heading (and by --help).
func TestDescribeNamesTheConfigsKeptAtTheirDefaults(t *testing.T) {
	repo := embeddedRepository(t)
	store, err := storage.NewFilesystem(repo)
	if err != nil {
		t.Fatal(err)
	}
	m, err := repository.Latest(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	atDefault := map[string]bool{}
	for _, tp := range m.Topics {
		for k, c := range tp.Configs {
			if c.Source == "DEFAULT_CONFIG" {
				atDefault[k] = true
			}
		}
	}
	if len(atDefault) == 0 {
		t.Fatal("the backup records no config at its default: the test shows nothing")
	}
	cfg := restoreConfig(t, []string{"127.0.0.1:9"}, repo)
	code, stdout, stderr := runCLI(t, "describe", "-c", cfg)
	if code != exitOK {
		t.Fatalf("describe: exit %d\n%s\n%s", code, stdout, stderr)
	}
	heading := regexp.MustCompile(`(?m)^configs \(.*$`).FindString(stdout)
	if heading == "" {
		t.Fatalf("no configs heading:\n%s", stdout)
	}
	_, help, _ := runCLI(t, "describe", "--help")
	help = strings.Join(strings.Fields(help), " ")
	for k := range atDefault {
		if !strings.Contains(stdout, k+"=") {
			t.Errorf("describe does not show %s", k)
		}
		if !strings.Contains(heading, k) {
			t.Errorf("describe shows %s at its default, and its heading %q does not say so", k, heading)
		}
		if !strings.Contains(help, k) {
			t.Errorf("describe --help does not name %s among the configs kept at their defaults", k)
		}
	}
}
