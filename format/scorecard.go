package format

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// This file holds a drill's scorecard (docs/FORMAT.md, "Drill scorecards"):
// what a drill measured, bound to its restore by the SHA-256 of the restore
// report and of the backup's manifest as stored, and wrapped in a signed
// envelope in the form of DSSE, in-toto's Dead Simple Signing Envelope
// (https://github.com/secure-systems-lab/dsse, protocol.md and
// envelope.md): the signature is over the pre-authentication encoding
// (PAE) of the payload type and the payload's exact bytes, never over a
// re-encoding.

// ScorecardVersion is the scorecard_version this code writes and the only
// one it reads.
const ScorecardVersion = 1

// ScorecardPayloadType is the envelope's payloadType of a scorecard (DSSE:
// a media type naming how the payload is to be read).
const ScorecardPayloadType = "application/vnd.kafkastreams-dr.scorecard+json; version=1"

// ScorecardKey is the key of the scorecard of the drill drillID, beside its
// report: drills/<drill-id>/scorecard.json (a ScorecardEnvelope).
func ScorecardKey(drillID string) string { return drillsPrefix + drillID + "/scorecard.json" }

// Scorecard is the body of a drill's scorecard: what the drill measured and
// which restore and backup it measured, without anything secret (no
// credentials, no broker addresses, no repository location). It is the
// payload of a ScorecardEnvelope, encoded by encoding/json (compact).
type Scorecard struct {
	ScorecardVersion int    `json:"scorecard_version"` // ScorecardVersion
	Tool             string `json:"tool"`              // "kafkastreams-dr"
	ToolVersion      string `json:"tool_version"`      // the binary's version (kafkastreams-dr version)
	// DrillID is the drill's id ("" when the drill did not record its
	// report: drill.Options.NoRecord, or it never read its manifest).
	DrillID       string    `json:"drill_id,omitempty"`
	ApplicationID string    `json:"application_id"`
	BackupID      string    `json:"backup_id,omitempty"`
	RestoreID     string    `json:"restore_id,omitempty"` // "" when the restore did not finish
	Strategy      Strategy  `json:"strategy"`
	StartedAt     time.Time `json:"started_at"`
	LostAt        time.Time `json:"lost_at,omitzero"`
	CutAt         time.Time `json:"cut_at,omitzero"`
	FinishedAt    time.Time `json:"finished_at"`
	OK            bool      `json:"ok"` // every phase passed
	// Figures are the recovery times and the RPO, each with its
	// definition; a figure the drill did not reach has Seconds null.
	Figures ScorecardFigures `json:"figures"`
	Volume  ScorecardVolume  `json:"volume"`
	// States are the state checks of the restored stores (equal,
	// different, not recorded), by store; empty when no changelog was
	// restored or the drill did not get that far.
	States []ScorecardState `json:"states,omitempty"`
	Phases []ScorecardPhase `json:"phases"`
	// Binding ties the scorecard to one restore of one backup.
	Binding ScorecardBinding `json:"binding"`
}

// ScorecardFigure is one measured time in seconds (millisecond precision),
// null when the drill did not reach it, with the name and definition of
// what it measures.
type ScorecardFigure struct {
	Name       string   `json:"name"`
	Seconds    *float64 `json:"seconds"`
	Definition string   `json:"definition"`
}

// ScorecardFigures are the drill's RTO figures and RPO (docs/OPERATIONS.md,
// "Drill evidence"; drill.Report).
type ScorecardFigures struct {
	RTO             ScorecardFigure `json:"rto"`
	RTODataRestored ScorecardFigure `json:"rto_data_restored"`
	RTOAppRunning   ScorecardFigure `json:"rto_app_running"`
	RTOAppCaughtUp  ScorecardFigure `json:"rto_app_caught_up"`
	RPO             ScorecardFigure `json:"rpo"`
}

// ScorecardVolume is how much data the drill moved.
type ScorecardVolume struct {
	Topics          int   `json:"topics"`     // topics in the backup
	Partitions      int   `json:"partitions"` // partitions in the backup
	Records         int64 `json:"records"`    // records the backup holds
	Bytes           int64 `json:"bytes"`      // stored segment bytes of the backup
	RecordsRestored int64 `json:"records_restored"`
	RecordsVerified int64 `json:"records_verified"`
}

// ScorecardState is the state check of one restored state store.
type ScorecardState struct {
	Store  string `json:"store"`
	Topic  string `json:"topic"`  // its changelog
	Result string `json:"result"` // "equal", "different" or "not recorded"
	Equal  bool   `json:"equal"`  // Result is "equal"
}

// ScorecardPhase is one phase of the drill and its outcome.
type ScorecardPhase struct {
	Name            string  `json:"name"`
	Status          string  `json:"status"` // "passed", "failed" or "skipped"
	DurationSeconds float64 `json:"duration_seconds"`
}

// ScorecardBinding names the restore report and the manifest the drill
// measured, each with the SHA-256 (lowercase hex) of the object's exact
// bytes as stored in the repository (its plaintext, after decryption, on
// a repository with storage.encryption): restores/<restore-id>/report.json
// holds the restore's plan (its fields are the report's own), and it is
// written once, so its bytes are the plan as the restore recorded it. A
// field is empty when the drill did not get that far.
type ScorecardBinding struct {
	RestoreReportKey    string `json:"restore_report_key,omitempty"`
	RestoreReportSHA256 string `json:"restore_report_sha256,omitempty"`
	ManifestKey         string `json:"manifest_key,omitempty"`
	ManifestSHA256      string `json:"manifest_sha256,omitempty"`
}

// ScorecardEnvelope is a scorecard as written: a DSSE envelope. Payload is
// the scorecard's JSON bytes (standard base64 in JSON); Signatures may be
// empty (an unsigned scorecard).
type ScorecardEnvelope struct {
	PayloadType string               `json:"payloadType"`
	Payload     []byte               `json:"payload"` // encoding/json writes []byte as standard base64
	Signatures  []ScorecardSignature `json:"signatures"`
}

// ScorecardSignature is one Ed25519 signature of the envelope: KeyID names
// the public key (KeyID), Sig the 64-byte signature over
// PAE(payloadType, payload).
type ScorecardSignature struct {
	KeyID string `json:"keyid"`
	Sig   []byte `json:"sig"`
}

// PAE is DSSE's pre-authentication encoding of a payload of type
// payloadType: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, each LEN
// the byte length in ASCII decimal. It is the message signed.
func PAE(payloadType string, body []byte) []byte {
	var b bytes.Buffer
	b.WriteString("DSSEv1 ")
	b.WriteString(strconv.Itoa(len(payloadType)))
	b.WriteByte(' ')
	b.WriteString(payloadType)
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteByte(' ')
	b.Write(body)
	return b.Bytes()
}

// NewScorecardEnvelope encodes sc (compact encoding/json) as an envelope's
// payload, signed with key when key is not nil, and returns the envelope's
// indented JSON.
func NewScorecardEnvelope(sc *Scorecard, key ed25519.PrivateKey) ([]byte, error) {
	body, err := json.Marshal(sc)
	if err != nil {
		return nil, err
	}
	env := ScorecardEnvelope{PayloadType: ScorecardPayloadType, Payload: body, Signatures: []ScorecardSignature{}}
	if key != nil {
		pub, ok := key.Public().(ed25519.PublicKey)
		if !ok {
			return nil, errors.New("sign scorecard: not an Ed25519 key")
		}
		env.Signatures = append(env.Signatures, ScorecardSignature{KeyID: KeyID(pub), Sig: ed25519.Sign(key, PAE(env.PayloadType, body))})
	}
	return json.MarshalIndent(&env, "", "  ")
}

// DecodeScorecardEnvelope decodes an envelope and its payload. Errors name
// what is wrong: not JSON, another payloadType, a payload that is not a
// scorecard, or a scorecard_version this code does not read.
func DecodeScorecardEnvelope(b []byte) (*ScorecardEnvelope, *Scorecard, error) {
	var env ScorecardEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, nil, fmt.Errorf("not a scorecard envelope: %v", JSONError(err))
	}
	if env.PayloadType != ScorecardPayloadType {
		return nil, nil, fmt.Errorf("not a scorecard envelope: payloadType %q, want %q", env.PayloadType, ScorecardPayloadType)
	}
	var sc Scorecard
	if err := json.Unmarshal(env.Payload, &sc); err != nil {
		return nil, nil, fmt.Errorf("the envelope's payload is not a scorecard: %v", JSONError(err))
	}
	if sc.ScorecardVersion != ScorecardVersion {
		return nil, nil, fmt.Errorf("scorecard_version %d: this kafkastreams-dr reads version %d only (upgrade kafkastreams-dr)", sc.ScorecardVersion, ScorecardVersion)
	}
	return &env, &sc, nil
}

// Verify reports which signature of env verifies with one of keys: the
// key id of the first that does. A signature whose keyid names none of
// keys is not tried (DSSE keyids are hints; one left empty is tried with
// every key). The errors: ErrUnsigned (no signature at all),
// ErrUnknownKey (no signature by any of keys), ErrBadSignature (a
// signature by one of keys does not verify: the payload or the signature
// changed).
func (env *ScorecardEnvelope) Verify(keys []ed25519.PublicKey) (string, error) {
	if len(env.Signatures) == 0 {
		return "", ErrUnsigned
	}
	msg := PAE(env.PayloadType, env.Payload)
	tried := false
	for _, s := range env.Signatures {
		for _, k := range keys {
			id := KeyID(k)
			if s.KeyID != "" && s.KeyID != id {
				continue
			}
			tried = true
			if ed25519.Verify(k, msg, s.Sig) {
				return id, nil
			}
		}
	}
	if !tried {
		var ids []string
		for _, s := range env.Signatures {
			ids = append(ids, s.KeyID)
		}
		return "", fmt.Errorf("%w: signed by %s", ErrUnknownKey, strings.Join(ids, ", "))
	}
	return "", ErrBadSignature
}

// Errors of ScorecardEnvelope.Verify; test with errors.Is.
var (
	ErrUnsigned     = errors.New("the scorecard is not signed")
	ErrUnknownKey   = errors.New("no signature by the given public key")
	ErrBadSignature = errors.New("the signature does not verify: the payload was changed after it was signed, or the signature is another scorecard's")
)

// KeyID is the id of an Ed25519 public key: "sha256:" and the lowercase
// hex SHA-256 of its DER SubjectPublicKeyInfo (RFC 8410), what
// `openssl pkey -pubin -in pub.pem -outform DER | sha256sum` prints.
func KeyID(pub ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil { // an ed25519.PublicKey always marshals
		return ""
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseSigningKey reads an Ed25519 private key: a PEM "PRIVATE KEY" block
// (PKCS#8, as `openssl genpkey -algorithm ed25519` writes), or the
// standard base64 of the 32-byte seed (RFC 8032), surrounding space
// ignored. The errors name the form found, never the key's bytes.
func ParseSigningKey(b []byte) (ed25519.PrivateKey, error) {
	t := bytes.TrimSpace(b)
	if bytes.HasPrefix(t, []byte("-----BEGIN")) {
		blk, _ := pem.Decode(t)
		if blk == nil {
			return nil, errors.New("a PEM block that does not decode")
		}
		if blk.Type != "PRIVATE KEY" {
			return nil, fmt.Errorf("a PEM %q block: want \"PRIVATE KEY\" (PKCS#8, openssl genpkey -algorithm ed25519)", blk.Type)
		}
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return nil, errors.New("a PKCS#8 block that does not parse")
		}
		ek, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("%s: want Ed25519 (openssl genpkey -algorithm ed25519)", keyKind(k))
		}
		return ek, nil
	}
	seed, err := base64.StdEncoding.DecodeString(string(t))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, errors.New("neither a PEM PRIVATE KEY block nor the base64 of a 32-byte Ed25519 seed")
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// keyKind names the algorithm of k, a key x509 parsed, in the field's
// terms ("an RSA key"), never a Go type name (issue 15).
func keyKind(k any) string {
	switch k.(type) {
	case *rsa.PrivateKey, *rsa.PublicKey:
		return "an RSA key"
	case *ecdsa.PrivateKey, *ecdsa.PublicKey:
		return "an ECDSA key"
	case *ecdh.PrivateKey, *ecdh.PublicKey:
		return "an ECDH (X25519) key"
	}
	return "a key of another algorithm"
}

// ParsePublicKey reads an Ed25519 public key from a PEM "PUBLIC KEY" block
// (SubjectPublicKeyInfo, as `openssl pkey -in key.pem -pubout` writes).
func ParsePublicKey(b []byte) (ed25519.PublicKey, error) {
	blk, _ := pem.Decode(bytes.TrimSpace(b))
	if blk == nil {
		return nil, errors.New("no PEM block: want a PEM PUBLIC KEY (openssl pkey -in key.pem -pubout)")
	}
	if blk.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("a PEM %q block: want \"PUBLIC KEY\" (openssl pkey -in key.pem -pubout)", blk.Type)
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("a PUBLIC KEY block that does not parse: %v", err)
	}
	ek, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%s: want Ed25519", keyKind(k))
	}
	return ek, nil
}
