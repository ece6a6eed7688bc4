package restorecheck

import (
	"fmt"
	"testing"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/statedigest"
)

// DigestOf is the state digest of records (in offset order), computed
// here from records an independent client read (docs/FORMAT.md, "State
// digest").
func DigestOf(records []format.Record) statedigest.StateDigest {
	d := statedigest.New()
	for _, r := range records {
		d.Add(r.Key, r.Value)
	}
	return d.Sum()
}

// StateDigests asserts that rep, a restore of the backup m, proved the
// state of every changelog partition it restored (class changelog, or a
// source-topic changelog) without a --to-time cut: the report says
// "equal" and holds the manifest's digest, and, when restored is not nil
// (the target's records as this package or kcat read them), the state of
// those records has that digest too. It returns how many partitions it
// checked; a backup with changelogs where none was checked fails.
func StateDigests(t testing.TB, m *format.Manifest, rep *format.RestoreReport, restored Records) int {
	t.Helper()
	reports := map[string]format.PartitionReport{}
	for _, pr := range rep.Partitions {
		reports[fmt.Sprintf("%s/%d", pr.Topic, pr.Partition)] = pr
	}
	checked, changelogs := 0, 0
	for _, tp := range m.Topics {
		if tp.Class != "changelog" && !tp.SourceChangelog {
			continue
		}
		for _, p := range tp.PartitionCuts {
			what := fmt.Sprintf("topic %q partition %d", tp.Name, p.Partition)
			pr, ok := reports[fmt.Sprintf("%s/%d", tp.Name, p.Partition)]
			if !ok {
				continue // not restored (rebuild: changelogs are left out)
			}
			changelogs++
			if pr.StateDigestResult == format.StateDigestCut {
				continue
			}
			if p.StateDigest == nil {
				t.Errorf("%s: the manifest has no state digest", what)
				continue
			}
			if pr.StateDigestResult != format.StateDigestEqual || pr.StateDigest == nil || !pr.StateDigest.Equal(*p.StateDigest) {
				t.Errorf("%s: report says %q, target digest %+v; the manifest's is %+v", what, pr.StateDigestResult, pr.StateDigest, *p.StateDigest)
			}
			if restored != nil {
				if got := DigestOf(restored[tp.Name][p.Partition]); !got.Equal(*p.StateDigest) {
					t.Errorf("%s: the restored records read here have state digest %+v; the manifest's is %+v", what, got, *p.StateDigest)
				}
			}
			checked++
		}
	}
	if changelogs > 0 && checked == 0 {
		t.Errorf("restore %s restored %d changelog partitions and proved the state of none", rep.RestoreID, changelogs)
	}
	return checked
}

// KcatDigest is the state digest of one partition as kcat read it
// (testkit.KcatConsume with -p): a null payload is a tombstone, "" an
// empty value. kcat prints keys and values as JSON strings, so the
// records must be text.
func KcatDigest(msgs []testkit.KcatMessage) statedigest.StateDigest {
	d := statedigest.New()
	bytesOf := func(s *string) []byte {
		if s == nil {
			return nil
		}
		return append([]byte{}, *s...) // "" is empty, not null
	}
	for _, m := range msgs {
		d.Add(bytesOf(m.Key), bytesOf(m.Payload))
	}
	return d.Sum()
}

// KcatStateDigests reads every changelog partition of m that has a state
// digest from the cluster at brokers with kcat (read_committed, an
// implementation apart from franz-go) and asserts that its state has the
// manifest's digest. It returns how many partitions it checked.
func KcatStateDigests(t testing.TB, m *format.Manifest, brokers string) int {
	t.Helper()
	n := 0
	for _, tp := range m.Topics {
		if tp.Class != "changelog" && !tp.SourceChangelog {
			continue
		}
		for _, p := range tp.PartitionCuts {
			if p.StateDigest == nil {
				continue
			}
			msgs := testkit.KcatConsume(t, brokers, tp.Name, "-p", fmt.Sprint(p.Partition), "-X", "isolation.level=read_committed", "-X", "fetch.wait.max.ms=10")
			if got := KcatDigest(msgs); !got.Equal(*p.StateDigest) {
				t.Errorf("topic %q partition %d: kcat reads state digest %+v on the target; the manifest's is %+v", tp.Name, p.Partition, got, *p.StateDigest)
			}
			n++
		}
	}
	return n
}
