package backup

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTailFilter: which records of a tail read with read_uncommitted are
// kept, in offset order (docs/DOMAIN.md#in-flight). Each event is
// "<producer><kind>" at the next offset: t a transactional record, p a
// plain (non-transactional) one, C a COMMIT marker, A an ABORT marker.
func TestTailFilter(t *testing.T) {
	tests := []struct {
		name   string
		events []string
		want   string // kept offsets
	}{
		{"plain records are kept", []string{"1p", "1p"}, "0 1"},
		{"a committed transaction is kept at its marker", []string{"1t", "1t", "1C"}, "0 1"},
		{"an aborted transaction is dropped", []string{"1t", "1A", "2p"}, "2"},
		{"a transaction open at the cut is dropped, what another committed after it is kept in order",
			[]string{"1t", "2t", "2t", "2C", "3p", "1t"}, "1 2 4"},
		{"two transactions of one producer, one after the other", []string{"1t", "1C", "1t", "1A", "1t", "1C"}, "0 4"},
		{"interleaved producers decide out of order, keep in offset order", []string{"1t", "2t", "2C", "1t", "1C"}, "0 1 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f tailFilter
			var kept []string
			for off, e := range tt.events {
				var pid int64
				var kind byte
				fmt.Sscanf(e[:1], "%d", &pid)
				kind = e[1]
				rec := &kgo.Record{Offset: int64(off), ProducerID: pid}
				switch kind {
				case 't':
					rec.Attrs = txnAttrs
				case 'C', 'A':
					rec.Attrs = controlAttrs
					rec.Key = make([]byte, 4)
					if kind == 'C' {
						binary.BigEndian.PutUint16(rec.Key[2:], 1)
					}
				}
				for _, k := range f.add(rec, nil) {
					kept = append(kept, fmt.Sprint(k.rec.Offset))
				}
			}
			for _, k := range f.finish() {
				kept = append(kept, fmt.Sprint(k.rec.Offset))
			}
			if got := strings.Join(kept, " "); got != tt.want {
				t.Errorf("kept offsets %q, want %q", got, tt.want)
			}
		})
	}
}

var (
	txnAttrs     = kgo.NewRecordAttrs(kgo.RecordAttrsOpts{Transactional: true})
	controlAttrs = kgo.NewRecordAttrs(kgo.RecordAttrsOpts{Transactional: true, Control: true})
)
