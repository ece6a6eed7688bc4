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
// the sum modulo 2^128 over the live keys k with value v of the first 16
// bytes of SHA-256(len(k) || k || len(v) || v) read as a big-endian
// unsigned integer, lengths as 4-byte big-endian unsigned integers, the sum
// written as 32 lowercase hex digits (big-endian). A digest of another
// algorithm is never compared with one of this.
const Algorithm = "sha256-128-sum-v1"

// StateDigest is the digest of one changelog partition's state, as the
// manifest stores it (partition_cuts[].state_digest) and a restore report
// records it. JSON field names are the contract (docs/FORMAT.md).
type StateDigest struct {
	Algorithm string `json:"algorithm"` // Algorithm
	Keys      int64  `json:"keys"`      // live keys: keys whose latest record has a non-null value
	Digest    string `json:"digest"`    // 32 lowercase hex digits
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

// sum128 is an unsigned 128-bit integer, most significant half first.
type sum128 [2]uint64

// term is one key's term of the sum, and a key's identity in the map: 16
// bytes of a SHA-256.
type term [16]byte

func (s *sum128) add(t *term) {
	var c uint64
	s[1], c = bits.Add64(s[1], binary.BigEndian.Uint64(t[8:]), 0)
	s[0], _ = bits.Add64(s[0], binary.BigEndian.Uint64(t[:8]), c)
}

func (s *sum128) sub(t *term) {
	var b uint64
	s[1], b = bits.Sub64(s[1], binary.BigEndian.Uint64(t[8:]), 0)
	s[0], _ = bits.Sub64(s[0], binary.BigEndian.Uint64(t[:8]), b)
}

// Digester accumulates the state of one partition. Feed it the partition's
// records in offset order with Add; Sum gives the digest of the state so
// far and may be called at any time. The zero value is not usable: call
// New. A Digester is not safe for concurrent use.
//
// Memory: one map entry per live key, holding two 16-byte hashes (the
// first 16 bytes of the key's SHA-256, and the key's term of the sum): 53
// to 80 bytes per live key with Go's map overhead, depending on how full
// the map is (BenchmarkMemoryPerLiveKey, 0.9 to 1.6 million keys), whatever
// the keys' and values' sizes. A tombstoned key frees its entry. Two keys
// whose SHA-256 agree in their first 128 bits are taken for one
// (about n^2 / 2^129 for n keys: 10^-21 for a billion).
type Digester struct {
	live     map[term]term // SHA-256(key)[:16] -> the key's term
	sum      sum128
	nullKeys int64
}

// New returns an empty Digester: the digest of no state.
func New() *Digester {
	return &Digester{live: map[term]term{}}
}

// Add applies one record: a non-nil value (empty included: null is not
// empty) becomes key's latest value, a nil value (a tombstone) removes key.
// A record with a nil key is counted (StateDigest.NullKeys) and skipped.
func (d *Digester) Add(key, value []byte) {
	if key == nil {
		d.nullKeys++
		return
	}
	full := sha256.Sum256(key)
	kh := term(full[:16])
	if old, ok := d.live[kh]; ok {
		d.sum.sub(&old)
		delete(d.live, kh)
	}
	if value == nil {
		return
	}
	t := term(Term(key, value))
	d.sum.add(&t)
	d.live[kh] = t
}

// Term is key's term of the sum when its latest value is value: the first
// 16 bytes of SHA-256(len(key) || key || len(value) || value), each length
// 4 bytes big-endian.
func Term(key, value []byte) [16]byte {
	h := sha256.New()
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(key)))
	h.Write(n[:])
	h.Write(key)
	binary.BigEndian.PutUint32(n[:], uint32(len(value)))
	h.Write(n[:])
	h.Write(value)
	var sum [32]byte
	h.Sum(sum[:0])
	return [16]byte(sum[:16])
}

// Sum returns the digest of the state fed so far.
func (d *Digester) Sum() StateDigest {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], d.sum[0])
	binary.BigEndian.PutUint64(b[8:], d.sum[1])
	return StateDigest{Algorithm: Algorithm, Keys: int64(len(d.live)), Digest: hex.EncodeToString(b[:]), NullKeys: d.nullKeys}
}
