package storage

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// The envelope of an encrypted object (docs/FORMAT.md, "Encryption"): a
// plaintext header, then the object's bytes as a stream of chunks, each
// sealed with AES-256-GCM. The construction is the STREAM online AEAD of
// Hoang, Reyhanitabar, Rogaway and Vizár ("Online Authenticated-Encryption
// and its Nonce-Reuse Misuse-Resistance", CRYPTO 2015) as age
// (C2SP age.md, "Payload") and Tink's AES-GCM-HKDF streaming AEAD use it:
// a per-object key derived with HKDF-SHA-256 from the master key and a
// random salt, a nonce of a random per-object prefix and a big-endian
// chunk counter, and a last-chunk flag authenticated with every chunk, so
// that a truncated, extended or reordered object fails to open. The
// associated data of every chunk also holds the whole header and the
// object's key, so that a header or chunk copied from another object, or a
// whole object stored under another key, fails too.
const (
	// EnvelopeMagic begins every encrypted object. Its first byte has the
	// high bit set, so no JSON document, lock or segment starts with it.
	EnvelopeMagic = "\x89KDRENC\n"
	// EnvelopeVersion is the version of the envelope this package writes
	// and the only one it reads.
	EnvelopeVersion = 1
	// EnvelopeAlgorithm is the one algorithm of version 1: AES-256-GCM
	// over 64 KiB chunks, per-object keys from HKDF-SHA-256.
	EnvelopeAlgorithm = 1
	// EnvelopeHeaderSize is the size in bytes of the plaintext header:
	// magic (8), version (1), algorithm (1), key id (8), salt (16), nonce
	// prefix (8).
	EnvelopeHeaderSize = len(EnvelopeMagic) + 1 + 1 + keyIDSize + saltSize + noncePrefixSize
	// EnvelopeChunkSize is the plaintext size in bytes of every chunk but
	// the last, which holds 0 (an empty object only) to EnvelopeChunkSize
	// bytes.
	EnvelopeChunkSize = 64 << 10
	// KeySize is the size in bytes of a repository key (AES-256).
	KeySize = 32

	keyIDSize       = 8
	saltSize        = 16
	noncePrefixSize = 8
	tagSize         = 16
	objectKeyInfo   = "kafkastreams-dr envelope v1 object key"
	keyIDMessage    = "kafkastreams-dr key id v1"
)

// ErrNoKey is wrapped by Get's error (a *KeyError) when the object is
// encrypted with a key the keyring does not hold: no key is configured,
// or only others. Test with errors.Is. A configuration error, never damage
// and never transient.
var ErrNoKey = errors.New("encrypted with a key that is not configured")

// KeyError is the error of a Get of an object encrypted with a key the
// keyring does not hold. It names the object, the key id it needs and the
// ids the keyring holds, never key material.
type KeyError struct {
	Key        string   // the object's key
	KeyID      string   // the key id in its envelope header
	Configured []string // the keyring's key ids, primary first; empty when none
}

func (e *KeyError) Error() string {
	if len(e.Configured) == 0 {
		return fmt.Sprintf("object %s is encrypted with key id %s, and no encryption key is configured", e.Key, e.KeyID)
	}
	return fmt.Sprintf("object %s is encrypted with key id %s, which none of the configured keys has (configured key ids: %s)",
		e.Key, e.KeyID, strings.Join(e.Configured, ", "))
}

func (e *KeyError) Unwrap() error { return ErrNoKey }

// ParseKey decodes a repository key written as standard base64 (as
// `openssl rand -base64 32` prints it), ignoring surrounding white space.
// It must decode to KeySize (32) bytes. The error never quotes the text.
func ParseKey(text []byte) ([]byte, error) {
	s := strings.TrimSpace(string(text))
	if s == "" {
		return nil, errors.New("the key is empty (write 32 random bytes in base64: openssl rand -base64 32)")
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("the key is not valid base64 (write 32 random bytes in base64: openssl rand -base64 32)")
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("the key decodes to %d bytes, not %d (write 32 random bytes in base64: openssl rand -base64 32)", len(key), KeySize)
	}
	return key, nil
}

// KeyID returns the id of a repository key: the first 8 bytes of
// HMAC-SHA-256(key, "kafkastreams-dr key id v1") in hex (16 characters).
// The id is derived from the key, so a wrong key can never claim the id of
// the right one, and it reveals nothing of the key.
func KeyID(key []byte) string {
	id := keyID(key)
	return hex.EncodeToString(id[:])
}

func keyID(key []byte) [keyIDSize]byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(keyIDMessage))
	var id [keyIDSize]byte
	copy(id[:], m.Sum(nil))
	return id
}

// Keyring holds the repository keys: the first (the primary) encrypts
// every object Encrypt's Put writes, the others only decrypt (the keys of
// a rotation, docs/OPERATIONS.md "Encryption"). The zero Keyring holds no
// key: objects are written in plaintext, and an encrypted one is refused
// with a *KeyError naming the key id it needs. Safe for concurrent use
// once built.
type Keyring struct {
	keys []ringKey
}

type ringKey struct {
	id  [keyIDSize]byte
	key []byte
}

// Add adds a KeySize-byte key; the first added is the primary. A key of
// another size, or one whose id the keyring already holds (the same key
// twice), is an error.
func (k *Keyring) Add(key []byte) error {
	if len(key) != KeySize {
		return fmt.Errorf("a key is %d bytes, not %d", len(key), KeySize)
	}
	id := keyID(key)
	for _, rk := range k.keys {
		if rk.id == id {
			return fmt.Errorf("key id %s is configured twice", hex.EncodeToString(id[:]))
		}
	}
	k.keys = append(k.keys, ringKey{id: id, key: bytes.Clone(key)})
	return nil
}

// Primary returns the id of the key that encrypts new objects, "" when the
// keyring holds none (objects are then written in plaintext).
func (k *Keyring) Primary() string {
	if k == nil || len(k.keys) == 0 {
		return ""
	}
	return hex.EncodeToString(k.keys[0].id[:])
}

// IDs returns the ids of the keyring's keys, the primary first.
func (k *Keyring) IDs() []string {
	if k == nil {
		return nil
	}
	ids := make([]string, len(k.keys))
	for i, rk := range k.keys {
		ids[i] = hex.EncodeToString(rk.id[:])
	}
	return ids
}

func (k *Keyring) find(id [keyIDSize]byte) []byte {
	if k == nil {
		return nil
	}
	for _, rk := range k.keys {
		if rk.id == id {
			return rk.key
		}
	}
	return nil
}

// EncryptedSize returns the stored size in bytes of an object of n
// plaintext bytes written through Encrypt with a key: the header, the
// bytes, and a 16-byte tag per chunk (at least one chunk). -1 stays -1.
func EncryptedSize(n int64) int64 {
	if n < 0 {
		return -1
	}
	chunks := max((n+EnvelopeChunkSize-1)/EnvelopeChunkSize, 1)
	return int64(EnvelopeHeaderSize) + n + chunks*tagSize
}

// Encrypt returns b with client-side encryption: Put seals the object in
// the envelope of docs/FORMAT.md ("Encryption") with ring's primary key
// (or writes it as it is when ring holds no key), and Get opens it with the
// key its header names, returning the plaintext; an object that does not
// begin with EnvelopeMagic is returned as it is, so that backups written
// before encryption was turned on stay readable. PutIfAbsent (the locks)
// always writes plaintext: its atomic compare is of the bytes given; so
// does Put of a key for which plaintext (when not nil) returns true (the
// locks' heartbeats: format.IsLockKey).
//
// Errors: Get of an object encrypted with a key ring does not hold
// returns a *KeyError (ErrNoKey) before any byte is read; a header that is
// not a version-1 header, and a chunk that does not authenticate (a
// changed, truncated, extended or reordered object, or one stored under
// another key), fail with an error naming the key and wrapping ErrCorrupt,
// at Get for the header, at the Read that reaches the chunk otherwise; no
// byte of a chunk is returned before it authenticates. Storage errors pass
// through unchanged (ErrNotFound, ErrTransient stay testable).
//
// Stat and List report the stored size (EncryptedSize of the plaintext for
// an encrypted object). Memory is bounded by two chunks per open reader
// or Put, whatever the object's size. Safe for concurrent use when b is.
// The key material never appears in an error or in the repository.
func Encrypt(b Backend, ring *Keyring, plaintext func(key string) bool) Backend {
	if ring == nil {
		ring = &Keyring{}
	}
	if plaintext == nil {
		plaintext = func(string) bool { return false }
	}
	return &encrypted{b: b, ring: ring, plaintext: plaintext}
}

type encrypted struct {
	b         Backend
	ring      *Keyring
	plaintext func(string) bool
}

func (e *encrypted) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if len(e.ring.keys) == 0 || e.plaintext(key) {
		return e.b.Put(ctx, key, r, size)
	}
	s, err := newSealer(e.ring.keys[0], key, checkedReader(ctx, r, size))
	if err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	return e.b.Put(ctx, key, s, EncryptedSize(size))
}

func (e *encrypted) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return e.b.PutIfAbsent(ctx, key, data)
}

func (e *encrypted) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := e.b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	o, err := openEnvelope(e.ring, key, rc)
	if err != nil {
		rc.Close()
		return nil, err
	}
	return o, nil
}

func (e *encrypted) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	return e.b.Stat(ctx, key)
}

func (e *encrypted) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	return e.b.List(ctx, prefix, fn)
}

func (e *encrypted) Delete(ctx context.Context, key string) error { return e.b.Delete(ctx, key) }

func (e *encrypted) Location() string { return e.b.Location() }

// Unwrap returns the backend the wrapper encrypts for (as errors.Unwrap
// does for an error): for a caller that needs that backend's own methods,
// such as *S3's UploadBufferBytes.
func (e *encrypted) Unwrap() Backend { return e.b }

// AbortStaleUploads passes through to b's (S3); without one there is
// nothing to abort.
func (e *encrypted) AbortStaleUploads(ctx context.Context, olderThan time.Duration) (int, error) {
	if a, ok := e.b.(interface {
		AbortStaleUploads(context.Context, time.Duration) (int, error)
	}); ok {
		return a.AbortStaleUploads(ctx, olderThan)
	}
	return 0, nil
}

// RemoveStaleTemps passes through to b's (a local directory); without one
// there is nothing to remove.
func (e *encrypted) RemoveStaleTemps(ctx context.Context, dir string, olderThan time.Duration) (int, error) {
	if c, ok := e.b.(interface {
		RemoveStaleTemps(context.Context, string, time.Duration) (int, error)
	}); ok {
		return c.RemoveStaleTemps(ctx, dir, olderThan)
	}
	return 0, nil
}

// header builds a version-1 envelope header for key k with a fresh salt
// and nonce prefix.
func header(k ringKey) ([]byte, error) {
	h := make([]byte, EnvelopeHeaderSize)
	n := copy(h, EnvelopeMagic)
	h[n], h[n+1] = EnvelopeVersion, EnvelopeAlgorithm
	n += 2
	n += copy(h[n:], k.id[:])
	if _, err := rand.Read(h[n:]); err != nil {
		return nil, fmt.Errorf("random salt and nonce prefix: %w", err)
	}
	return h, nil
}

// chunkAEAD derives the object's AES-256-GCM from the master key and the
// header's salt: HKDF-SHA-256(master, salt, "kafkastreams-dr envelope v1
// object key"), 32 bytes.
func chunkAEAD(master, hdr []byte) (cipher.AEAD, error) {
	salt := hdr[EnvelopeHeaderSize-noncePrefixSize-saltSize : EnvelopeHeaderSize-noncePrefixSize]
	ok, err := hkdf.Key(sha256.New, master, salt, objectKeyInfo, KeySize)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(ok)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// stream is what sealing and opening share: the header, the AEAD, the
// associated data (header || last flag || object key) and the nonce
// (prefix || counter).
type stream struct {
	aead    cipher.AEAD
	aad     []byte
	nonce   [12]byte
	counter uint32
}

func newStream(master, hdr []byte, key string) (*stream, error) {
	aead, err := chunkAEAD(master, hdr)
	if err != nil {
		return nil, err
	}
	s := &stream{aead: aead, aad: make([]byte, 0, len(hdr)+1+len(key))}
	s.aad = append(append(append(s.aad, hdr...), 0), key...)
	copy(s.nonce[:], hdr[EnvelopeHeaderSize-noncePrefixSize:])
	return s, nil
}

// next sets the nonce and the last flag of the chunk to seal or open.
func (s *stream) next(last bool) ([]byte, []byte, error) {
	if s.counter == math.MaxUint32 && !last {
		return nil, nil, errors.New("object too large for the envelope (2^32 chunks)")
	}
	binary.BigEndian.PutUint32(s.nonce[noncePrefixSize:], s.counter)
	s.aad[EnvelopeHeaderSize] = 0
	if last {
		s.aad[EnvelopeHeaderSize] = 1
	}
	return s.nonce[:], s.aad, nil
}

// sealer is the envelope of src, read as a stream: the header, then each
// chunk sealed when the next byte of src is known (so the last is marked).
type sealer struct {
	src   io.Reader
	st    *stream
	in    []byte // plaintext read ahead: cap EnvelopeChunkSize+1
	carry int    // bytes of in carried into the next chunk (0 or 1)
	out   []byte // ciphertext not yet handed out
	buf   []byte // out's storage: EnvelopeChunkSize+tagSize
	done  bool
	err   error
}

func newSealer(k ringKey, key string, src io.Reader) (*sealer, error) {
	hdr, err := header(k)
	if err != nil {
		return nil, err
	}
	st, err := newStream(k.key, hdr, key)
	if err != nil {
		return nil, err
	}
	return &sealer{src: src, st: st, in: make([]byte, EnvelopeChunkSize+1),
		out: hdr, buf: make([]byte, 0, EnvelopeChunkSize+tagSize)}, nil
}

// Read fills p as far as the stream goes (whole buffers: a sealed chunk
// is 16 bytes longer than a power of two, and a short read each chunk
// would cost the store one more write call).
func (s *sealer) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(s.out) == 0 {
			if s.err != nil || s.done {
				break
			}
			if s.err = s.fill(); s.err != nil {
				break
			}
			continue
		}
		m := copy(p[n:], s.out)
		s.out = s.out[m:]
		n += m
	}
	switch {
	case n > 0:
		return n, nil
	case s.err != nil:
		return 0, s.err
	}
	return 0, io.EOF
}

// fill seals the next chunk into out.
func (s *sealer) fill() error {
	m, err := io.ReadFull(s.src, s.in[s.carry:])
	total := s.carry + m
	last := false
	switch err {
	case nil:
		total = EnvelopeChunkSize
	case io.EOF, io.ErrUnexpectedEOF: // ReadFull's own, unwrapped
		last = true
	default:
		return err
	}
	nonce, aad, err := s.st.next(last)
	if err != nil {
		return err
	}
	s.out = s.st.aead.Seal(s.buf[:0], nonce, s.in[:total], aad)
	s.st.counter++
	if last {
		s.done = true
		return nil
	}
	s.in[0] = s.in[EnvelopeChunkSize]
	s.carry = 1
	return nil
}

// envelopeHeader is a parsed version-1 header.
type envelopeHeader struct {
	raw   []byte
	keyID [keyIDSize]byte
}

// parseHeader parses a header that begins with EnvelopeMagic; key names
// the object in errors.
func parseHeader(key string, h []byte) (envelopeHeader, error) {
	n := len(EnvelopeMagic)
	if len(h) < EnvelopeHeaderSize {
		return envelopeHeader{}, &corruptError{fmt.Errorf("object %s: encrypted envelope header truncated at %d of %d bytes", key, len(h), EnvelopeHeaderSize)}
	}
	if h[n] != EnvelopeVersion {
		return envelopeHeader{}, &corruptError{fmt.Errorf("object %s: encrypted envelope version %d, this kafkastreams-dr reads only version %d (a newer writer, or damage: upgrade kafkastreams-dr)", key, h[n], EnvelopeVersion)}
	}
	if h[n+1] != EnvelopeAlgorithm {
		return envelopeHeader{}, &corruptError{fmt.Errorf("object %s: encrypted envelope algorithm %d is not known (version 1 has only 1, AES-256-GCM)", key, h[n+1])}
	}
	eh := envelopeHeader{raw: h[:EnvelopeHeaderSize]}
	copy(eh.keyID[:], h[n+2:])
	return eh, nil
}

// readCloser is a reader with another's Close.
type readCloser struct {
	io.Reader
	io.Closer
}

// openEnvelope reads rc's header: a plaintext object is returned as it
// is, an encrypted one as an opener.
func openEnvelope(ring *Keyring, key string, rc io.ReadCloser) (io.ReadCloser, error) {
	hdr := make([]byte, EnvelopeHeaderSize)
	n, err := io.ReadFull(rc, hdr[:len(EnvelopeMagic)])
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	if n < len(EnvelopeMagic) || string(hdr[:n]) != EnvelopeMagic {
		return readCloser{io.MultiReader(bytes.NewReader(hdr[:n]), rc), rc}, nil
	}
	m, err := io.ReadFull(rc, hdr[n:])
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	eh, err := parseHeader(key, hdr[:n+m])
	if err != nil {
		return nil, err
	}
	master := ring.find(eh.keyID)
	if master == nil {
		return nil, &KeyError{Key: key, KeyID: hex.EncodeToString(eh.keyID[:]), Configured: ring.IDs()}
	}
	st, err := newStream(master, eh.raw, key)
	if err != nil {
		return nil, err
	}
	return &opener{rc: rc, key: key, st: st, buf: make([]byte, EnvelopeChunkSize+tagSize+1)}, nil
}

// opener returns the plaintext of an envelope, a chunk at a time, each
// only after it authenticates.
type opener struct {
	rc    io.ReadCloser
	key   string
	st    *stream
	buf   []byte // ciphertext read ahead: a sealed chunk and one byte
	carry int
	plain []byte // authenticated plaintext not yet handed out (in buf)
	done  bool
	err   error
}

func (o *opener) Read(p []byte) (int, error) {
	for len(o.plain) == 0 {
		if o.err != nil {
			return 0, o.err
		}
		if o.done {
			return 0, io.EOF
		}
		o.err = o.fill()
	}
	n := copy(p, o.plain)
	o.plain = o.plain[n:]
	return n, nil
}

func (o *opener) fill() error {
	if o.carry > 0 {
		// The byte read ahead of the previous chunk, which was opened in
		// place (its plaintext has been handed out).
		o.buf[0] = o.buf[EnvelopeChunkSize+tagSize]
	}
	m, err := io.ReadFull(o.rc, o.buf[o.carry:])
	total := o.carry + m
	last := false
	switch err {
	case nil:
		total = EnvelopeChunkSize + tagSize
	case io.EOF, io.ErrUnexpectedEOF: // ReadFull's own, unwrapped
		last = true
	default:
		return err
	}
	nonce, aad, err := o.st.next(last)
	if err != nil {
		return &corruptError{fmt.Errorf("object %s: %v", o.key, err)}
	}
	plain, err := o.st.aead.Open(o.buf[:0], nonce, o.buf[:total], aad)
	if err != nil {
		return &corruptError{fmt.Errorf("object %s: encrypted chunk %d does not authenticate: the object was changed, truncated, extended or stored under another key", o.key, o.st.counter)}
	}
	o.st.counter++
	o.plain = plain
	if last {
		o.done = true
		return nil
	}
	o.carry = 1
	return nil
}

func (o *opener) Close() error { return o.rc.Close() }

// Retention passes through to b's (S3: storage.RetentionReader), so that
// prune reads a manifest's Object Lock retention before it forgets a
// backup through the encrypting wrapper too; without one it is the zero
// Retention (nothing retained).
func (e *encrypted) Retention(ctx context.Context, key string) (Retention, error) {
	if rr, ok := e.b.(RetentionReader); ok {
		return rr.Retention(ctx, key)
	}
	return Retention{}, nil
}

var _ RetentionReader = (*encrypted)(nil)

// KeyInspector is implemented by Encrypt's Backend (and by ReadOnly over
// it): it tells which key an object needs without opening it, for the
// readers that say which keys a repository still needs (list: the
// restore and drill reports' key ids, docs/OPERATIONS.md "Encryption").
type KeyInspector interface {
	// ObjectKeyID returns the id of the key object key is encrypted
	// with (its envelope header), "" when it is plaintext; it reads the
	// header only. Storage errors pass through (ErrNotFound stays
	// testable); a header that does not parse wraps ErrCorrupt.
	ObjectKeyID(ctx context.Context, key string) (string, error)
	// ConfiguredKeyIDs returns the ids of the keyring's keys, the
	// primary first; empty when none is configured.
	ConfiguredKeyIDs() []string
}

var _ KeyInspector = (*encrypted)(nil)

func (e *encrypted) ObjectKeyID(ctx context.Context, key string) (string, error) {
	rc, err := e.b.Get(ctx, key)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	hdr := make([]byte, EnvelopeHeaderSize)
	n, err := io.ReadFull(rc, hdr)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return "", err
	}
	if n < len(EnvelopeMagic) || string(hdr[:len(EnvelopeMagic)]) != EnvelopeMagic {
		return "", nil
	}
	eh, err := parseHeader(key, hdr[:n])
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(eh.keyID[:]), nil
}

func (e *encrypted) ConfiguredKeyIDs() []string { return e.ring.IDs() }
