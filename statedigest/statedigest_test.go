package statedigest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"runtime"
	"testing"
)

type rec struct {
	key, value []byte
}

func sumOf(recs ...rec) StateDigest {
	d := New()
	for _, r := range recs {
		d.Add(r.key, r.value)
	}
	return d.Sum()
}

func b(s string) []byte { return []byte(s) }

func TestDigestRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		a, b  []rec
		equal bool
	}{
		{"keys written in another order give the same state",
			[]rec{{b("a"), b("1")}, {b("b"), b("2")}, {b("c"), b("3")}},
			[]rec{{b("c"), b("3")}, {b("a"), b("1")}, {b("b"), b("2")}}, true},
		{"a tombstone removes the key",
			[]rec{{b("a"), b("1")}, {b("b"), b("2")}, {b("a"), nil}},
			[]rec{{b("b"), b("2")}}, true},
		{"a tombstone of a key never written changes nothing",
			[]rec{{b("a"), b("1")}, {b("zz"), nil}},
			[]rec{{b("a"), b("1")}}, true},
		{"compaction keeps the latest value of each key",
			[]rec{{b("a"), b("1")}, {b("b"), b("2")}, {b("a"), b("3")}, {b("b"), b("4")}, {b("c"), b("5")}},
			[]rec{{b("a"), b("3")}, {b("b"), b("4")}, {b("c"), b("5")}}, true},
		{"compaction that kept a tombstone or dropped it",
			[]rec{{b("a"), b("1")}, {b("b"), b("2")}, {b("a"), nil}},
			[]rec{{b("a"), nil}, {b("b"), b("2")}}, true},
		{"a key deleted and written again",
			[]rec{{b("a"), b("1")}, {b("a"), nil}, {b("a"), b("2")}},
			[]rec{{b("a"), b("2")}}, true},
		{"an empty value is a value, not a tombstone",
			[]rec{{b("a"), b("1")}, {b("b"), []byte{}}},
			[]rec{{b("a"), b("1")}}, false},
		{"a null value differs from an empty one",
			[]rec{{b("a"), []byte{}}},
			[]rec{{b("a"), nil}}, false},
		{"an empty key is a key",
			[]rec{{[]byte{}, b("1")}},
			[]rec{}, false},
		{"a changed byte of a value changes the digest",
			[]rec{{b("a"), b("value-1")}, {b("b"), b("x")}},
			[]rec{{b("a"), b("value-2")}, {b("b"), b("x")}}, false},
		{"a changed byte of a key changes the digest",
			[]rec{{b("key-1"), b("v")}},
			[]rec{{b("key-2"), b("v")}}, false},
		{"the boundary between key and value is part of the term",
			[]rec{{b("ab"), b("c")}},
			[]rec{{b("a"), b("bc")}}, false},
		{"the latest value wins, not the first",
			[]rec{{b("a"), b("1")}, {b("a"), b("2")}},
			[]rec{{b("a"), b("1")}}, false},
		{"two keys swapping values differ",
			[]rec{{b("a"), b("1")}, {b("b"), b("2")}},
			[]rec{{b("a"), b("2")}, {b("b"), b("1")}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			da, db := sumOf(tc.a...), sumOf(tc.b...)
			if got := da.Equal(db); got != tc.equal {
				t.Fatalf("Equal = %v, want %v:\n a %+v\n b %+v", got, tc.equal, da, db)
			}
			if tc.equal && da.Digest != db.Digest {
				t.Fatalf("equal states, digests %s and %s", da.Digest, db.Digest)
			}
		})
	}
}

func TestNullKeysAreCountedAndSkipped(t *testing.T) {
	d := New()
	d.Add(b("a"), b("1"))
	d.Add(nil, b("x"))
	d.Add(nil, nil)
	got := d.Sum()
	want := sumOf(rec{b("a"), b("1")})
	if !got.Equal(want) || got.NullKeys != 2 || want.NullKeys != 0 {
		t.Fatalf("got %+v, want the digest of {a:1} with null_keys 2 (%+v)", got, want)
	}
}

func TestEmptyState(t *testing.T) {
	got := New().Sum()
	want := StateDigest{Algorithm: "sha256-128-sum-v1", Keys: 0, Digest: "00000000000000000000000000000000"}
	if got != want {
		t.Fatalf("Sum of nothing = %+v, want %+v", got, want)
	}
	if s := sumOf(rec{b("a"), b("1")}, rec{b("a"), nil}); s != want {
		t.Fatalf("a key written and deleted = %+v, want the empty state %+v", s, want)
	}
}

// TestAlgorithmByIndependentComputation computes the digest as docs/FORMAT.md
// describes it, with math/big instead of the package's limbs, on keys
// whose terms carry across every limb.
func TestAlgorithmByIndependentComputation(t *testing.T) {
	d := New()
	want := new(big.Int)
	for i := range 1000 {
		k, v := fmt.Appendf(nil, "key-%d", i), fmt.Appendf(nil, "value-%d", i*7)
		if i%10 == 0 {
			v = []byte{}
		}
		d.Add(k, v)
		buf := []byte{byte(len(k) >> 24), byte(len(k) >> 16), byte(len(k) >> 8), byte(len(k))}
		buf = append(buf, k...)
		buf = append(buf, byte(len(v)>>24), byte(len(v)>>16), byte(len(v)>>8), byte(len(v)))
		buf = append(buf, v...)
		h := sha256.Sum256(buf)
		want.Add(want, new(big.Int).SetBytes(h[:16]))
	}
	want.Mod(want, new(big.Int).Lsh(big.NewInt(1), 128))
	wb := make([]byte, 16)
	want.FillBytes(wb)
	got := d.Sum()
	if got.Digest != hex.EncodeToString(wb) || got.Keys != 1000 {
		t.Fatalf("digest %s keys %d, want %s keys 1000", got.Digest, got.Keys, hex.EncodeToString(wb))
	}
}

// TestGoldenVector pins the digest of a small state: an independent
// implementation of docs/FORMAT.md's "State digest" must give the same.
func TestGoldenVector(t *testing.T) {
	got := sumOf(rec{b("k1"), b("v1")}, rec{b("k2"), []byte{}}, rec{b("k3"), b("v3")}, rec{b("k3"), nil}, rec{b("k1"), b("v1b")})
	// SHA-256(00000002 6b31 00000003 763162)[:16] + SHA-256(00000002 6b32 00000000)[:16] mod 2^128;
	// the golden value was computed with Python hashlib, apart from this package.
	t1 := Term(b("k1"), b("v1b"))
	t2 := Term(b("k2"), []byte{})
	s := new(big.Int).Add(new(big.Int).SetBytes(t1[:]), new(big.Int).SetBytes(t2[:]))
	s.Mod(s, new(big.Int).Lsh(big.NewInt(1), 128))
	wb := make([]byte, 16)
	s.FillBytes(wb)
	const golden = "b8b435ea9df90b09a8e6023e4deffab8"
	if got.Digest != hex.EncodeToString(wb) {
		t.Fatalf("digest %s, want %s", got.Digest, hex.EncodeToString(wb))
	}
	if got.Digest != golden || got.Keys != 2 {
		t.Fatalf("digest %s keys %d, want the golden %s keys 2", got.Digest, got.Keys, golden)
	}
}

// BenchmarkMemoryPerLiveKey reports the heap a Digester holds per live key
// (docs/FORMAT.md, "State digest"), at sizes just after and just before
// the map grows.
func BenchmarkMemoryPerLiveKey(b *testing.B) {
	for _, keys := range []int{1 << 20, 3 << 19, 7 << 17} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			for range b.N {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				d := New()
				for i := range keys {
					d.Add(fmt.Appendf(nil, "key-%d", i), []byte("some value of some length"))
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(keys), "bytes/key")
				runtime.KeepAlive(d)
			}
		})
	}
}
