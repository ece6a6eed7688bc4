package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// FuzzParse feeds any bytes to the config parser as Load would give it a
// file (issue 14; seeds: the example configs of configs/ and this
// package's testdata, committed under testdata/fuzz/FuzzParse). No input
// panics; one refused gets an ErrorList of sentences naming the file; one
// accepted parses again to the same Config (the parser keeps no state);
// and parsing allocates in proportion to the input (Load reads at most
// MaxFileBytes), not by what an alias or a nesting multiplies.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "configs", "*.yaml"))
	more, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, file := range append(files, more...) {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	env := map[string]string{"KAFKA_PASSWORD": "s3cret", "KDR_BUCKET": "dr-backups"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	f.Fuzz(func(t *testing.T, data []byte) {
		var c *Config
		var err error
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c, err = parse(data, "app.yaml", lookup, false)
		runtime.ReadMemStats(&after)
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 32<<20+512*uint64(len(data)) {
			t.Fatalf("a %d-byte config allocated %d bytes parsing it (%v)", len(data), grown, err)
		}
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("a refused config's error is not an ErrorList: %T %v", err, err)
			}
			for _, e := range list {
				if e.File != "app.yaml" || strings.TrimSpace(e.Msg) == "" {
					t.Fatalf("a problem without its file or words: %+v", e)
				}
			}
			return
		}
		again, err := parse(data, "app.yaml", lookup, false)
		if err != nil {
			t.Fatalf("an accepted config is refused the second time: %v", err)
		}
		if !reflect.DeepEqual(c, again) {
			t.Fatalf("a config parses differently the second time:\n%+v\n%+v", c, again)
		}
	})
}
