package bench

import (
	"testing"
	"time"
)

const pprofTopSample = `File: kafkastreams-dr
Type: cpu
Time: 2026-12-01 23:12:27 UTC
Duration: 10.21s, Total samples = 1.50mins (88.13%)
Showing nodes accounting for 8.20s, 96.47% of 8.50s total
Dropped 120 nodes (cum <= 0.04s)
      flat  flat%   sum%        cum   cum%
         0     0%     0%     84.10s 93.44%  runtime.goexit
         0     0%     0%     60.00s 66.67%  main.main
         0     0%     0%     60.00s 66.67%  github.com/spf13/cobra.(*Command).execute
     0.10s  0.11%  0.11%     50.00s 55.56%  github.com/kafkastreams-dr/kafkastreams-dr/backup.(*runner).copyPartition
    45.00s 50.00% 50.11%     45.00s 50.00%  github.com/klauspost/compress/zstd.(*Encoder).EncodeAll
     350ms  0.39% 50.50%     1.20s  1.33%  runtime.mallocgc
     0.20s  0.22% 50.72%     1.00s  1.11%  io.ReadFull (inline)
`

func TestParsePprofTop(t *testing.T) {
	p, err := parsePprofTop(pprofTopSample, 3)
	if err != nil {
		t.Fatal(err)
	}
	if p.Total != 90*time.Second {
		t.Errorf("total %v, want 1m30s (1.50mins)", p.Total)
	}
	want := []ProfileLine{
		{Func: "github.com/kafkastreams-dr/kafkastreams-dr/backup.(*runner).copyPartition", FlatPct: 0.11, CumPct: 55.56, Cum: 50 * time.Second},
		{Func: "github.com/klauspost/compress/zstd.(*Encoder).EncodeAll", FlatPct: 50, CumPct: 50, Cum: 45 * time.Second},
		{Func: "runtime.mallocgc", FlatPct: 0.39, CumPct: 1.33, Cum: 1200 * time.Millisecond},
	}
	if len(p.Top) != len(want) {
		t.Fatalf("top %+v, want %+v (generic frames left out)", p.Top, want)
	}
	for i := range want {
		if p.Top[i] != want[i] {
			t.Errorf("top[%d] = %+v, want %+v", i, p.Top[i], want[i])
		}
	}
	p, err = parsePprofTop(pprofTopSample, 10)
	if err != nil || len(p.Top) != 4 || p.Top[3].Func != "io.ReadFull (inline)" {
		t.Errorf("all non-generic lines: %+v, %v; want 4 ending with io.ReadFull (inline)", p.Top, err)
	}
	if _, err := parsePprofTop("not a profile", 5); err == nil {
		t.Error("text without a table parsed, want an error")
	}
}
