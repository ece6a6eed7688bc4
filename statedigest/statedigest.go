// Package statedigest computes the digest of the state a changelog
// partition encodes: the latest value of every key over the partition's
// records, a null value (tombstone) removing the key. Two partitions that
// hold the same keys with the same latest values have the same digest,
// whatever order their keys were written in, and whatever compaction left of
// the earlier values (Kafka's LogCleaner keeps the latest record of each key
// and, after delete.retention.ms, drops tombstones: neither changes the
// state). It is how a restore proves that a restored changelog rebuilds the
// stores the backup held, not only that it holds as many records
// (docs/FORMAT.md, "State digest").
//
// The package imports nothing of this module: the backup feeds it the
// records it copies, the restore and verify the records they read back from
// the target cluster.
package statedigest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
)

// Algorithm names the digest this package computes (StateDigest.Algorithm):
// the sum modulo 2^256 over the live keys k with value v of
// SHA-256(len(k) || k || len(v) || v), lengths as 4-byte big-endian
// unsigned integers, the sum written as 64 lowercase hex digits (big-endian).
// A digest of another algorithm is never compared with one of this.
const Algorithm = "sha256-sum-v1"

// StateDigest is the digest of one changelog partition's state, as the
// manifest stores it (partition_cuts[].state_digest) and a restore report
// records it. JSON field names are the contract (docs/FORMAT.md).
type StateDigest struct {
	Algorithm string `json:"algorithm"` // Algorithm
	Keys      int64  `json:"keys"`      // live keys: keys whose latest record has a non-null value
	Digest    string `json:"digest"`    // 64 lowercase hex digits
	// NullKeys counts the records with a null key that were skipped. A
	// changelog record always has a key (Kafka refuses a keyless record in
	// a compacted topic: LogValidator, "Compacted topic cannot accept
	// message without key"), so a non-zero count says the topic is not the
	// changelog it was taken for, or was not compacted when they were
	// written. Not part of the digest.
	NullKeys int64 `json:"null_keys,omitempty"`
}

// Equal reports whether d and o digest the same state: same algorithm, same
// number of live keys, same digest. NullKeys are not compared (they are no
// part of the state).
func (d StateDigest) Equal(o StateDigest) bool {
	return d.Algorithm == o.Algorithm && d.Keys == o.Keys && d.Digest == o.Digest
}

// sum256 is an unsigned 256-bit integer, most significant limb first.
type sum256 [4]uint64

func (s *sum256) add(h *[32]byte) {
	var c uint64
	for i := 3; i >= 0; i-- {
		s[i], c = bits.Add64(s[i], binary.BigEndian.Uint64(h[8*i:]), c)
	}
}

func (s *sum256) sub(h *[32]byte) {
	var b uint64
	for i := 3; i >= 0; i-- {
		s[i], b = bits.Sub64(s[i], binary.BigEndian.Uint64(h[8*i:]), b)
	}
}

// Digester accumulates the state of one partition. Feed it the partition's
// records in offset order with Add; Sum gives the digest of the state so
// far and may be called at any time. The zero value is not usable: call
// New. A Digester is not safe for concurrent use.
//
// Memory: one map entry per live key, holding two 32-byte hashes (the
// SHA-256 of the key and the key's term of the sum): 144 bytes per live key
// measured with Go's map overhead (BenchmarkMemoryPerLiveKey, 2^20 keys),
// whatever the keys' and values' sizes. A tombstoned key frees its entry.
type Digester struct {
	live     map[[32]byte][32]byte // SHA-256(key) -> the key's term
	sum      sum256
	nullKeys int64
}

// New returns an empty Digester: the digest of no state.
func New() *Digester {
	return &Digester{live: map[[32]byte][32]byte{}}
}

// Add applies one record: a non-nil value (empty included: null is not
// empty) becomes key's latest value, a nil value (a tombstone) removes key.
// A record with a nil key is counted (StateDigest.NullKeys) and skipped.
func (d *Digester) Add(key, value []byte) {
	if key == nil {
		d.nullKeys++
		return
	}
	kh := sha256.Sum256(key)
	if old, ok := d.live[kh]; ok {
		d.sum.sub(&old)
		delete(d.live, kh)
	}
	if value == nil {
		return
	}
	t := Term(key, value)
	d.sum.add(&t)
	d.live[kh] = t
}

// Term is key's term of the sum when its latest value is value:
// SHA-256(len(key) || key || len(value) || value), each length 4 bytes
// big-endian.
func Term(key, value []byte) [32]byte {
	h := sha256.New()
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(key)))
	h.Write(n[:])
	h.Write(key)
	binary.BigEndian.PutUint32(n[:], uint32(len(value)))
	h.Write(n[:])
	h.Write(value)
	var t [32]byte
	h.Sum(t[:0])
	return t
}

// Sum returns the digest of the state fed so far.
func (d *Digester) Sum() StateDigest {
	var b [32]byte
	for i, l := range d.sum {
		binary.BigEndian.PutUint64(b[8*i:], l)
	}
	return StateDigest{Algorithm: Algorithm, Keys: int64(len(d.live)), Digest: hex.EncodeToString(b[:]), NullKeys: d.nullKeys}
}
