package bench

import (
	"maps"
	"strings"
	"testing"
)

func TestParseVariants(t *testing.T) {
	got, err := ParseVariants(" batch:backup.segment_kind=batch ; fast:backup.compression=zstd,backup.concurrency=8,storage.upload_buffer_bytes=32MiB;")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "batch" || got[1].Name != "fast" ||
		!maps.Equal(got[0].BackupConfig, map[string]string{"segment_kind": "batch"}) ||
		!maps.Equal(got[1].BackupConfig, map[string]string{"compression": "zstd", "concurrency": "8"}) ||
		!maps.Equal(got[1].StorageConfig, map[string]string{"upload_buffer_bytes": "32MiB"}) {
		t.Fatalf("ParseVariants = %+v", got)
	}
	if got, err := ParseVariants(""); err != nil || len(got) != 0 {
		t.Errorf("ParseVariants(\"\") = %+v, %v; want none", got, err)
	}
	for _, bad := range []string{"batch", ":backup.a=b", "x:segment_kind=batch", "x:source.a=b", "x:backup.a=", "x y:backup.a=b", "x:backup.a=b: c"} {
		if _, err := ParseVariants(bad); err == nil || !strings.Contains(err.Error(), "BENCH_VARIANTS") {
			t.Errorf("ParseVariants(%q) = %v, want an error naming BENCH_VARIANTS", bad, err)
		}
	}
}
