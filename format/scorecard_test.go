package format

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestPAE is DSSE's own worked example (protocol.md, github.com/secure-systems-lab/dsse):
// PAE("http://example.com/HelloWorld", "hello world").
func TestPAE(t *testing.T) {
	got := PAE("http://example.com/HelloWorld", []byte("hello world"))
	if want := "DSSEv1 29 http://example.com/HelloWorld 11 hello world"; string(got) != want {
		t.Errorf("PAE = %q, want %q", got, want)
	}
	if got := PAE("", nil); string(got) != "DSSEv1 0  0 " {
		t.Errorf("PAE of empties = %q", got)
	}
}

// openssl runs openssl and returns its stdout.
func openssl(t *testing.T, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("openssl", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// TestSigningKeysFromOpenSSL: the keys openssl writes parse, the key id is
// the SHA-256 of the public key's DER as openssl prints it, and a key that
// is not an Ed25519 private key is refused without its bytes in the error.
func TestSigningKeysFromOpenSSL(t *testing.T) {
	dir := t.TempDir()
	priv, pub, ec := filepath.Join(dir, "k.pem"), filepath.Join(dir, "k.pub.pem"), filepath.Join(dir, "ec.pem")
	openssl(t, "genpkey", "-algorithm", "ed25519", "-out", priv)
	openssl(t, "pkey", "-in", priv, "-pubout", "-out", pub)
	openssl(t, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", ec)
	der := openssl(t, "pkey", "-pubin", "-in", pub, "-outform", "DER")
	sum := sha256.Sum256(der)

	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	k, err := ParseSigningKey(read(priv))
	if err != nil {
		t.Fatal(err)
	}
	pk, err := ParsePublicKey(read(pub))
	if err != nil {
		t.Fatal(err)
	}
	if !pk.Equal(k.Public()) {
		t.Error("openssl's public key is not the private key's")
	}
	if got, want := KeyID(pk), "sha256:"+hex.EncodeToString(sum[:]); got != want {
		t.Errorf("KeyID = %s, want %s (openssl pkey -outform DER | sha256sum)", got, want)
	}
	seed, err := ParseSigningKey([]byte("  " + base64.StdEncoding.EncodeToString(k.Seed()) + "\n"))
	if err != nil || !seed.Equal(k) {
		t.Errorf("the base64 seed of the key: %v", err)
	}

	for _, tc := range []struct {
		name, in, want string
	}{
		{"an EC key", string(read(ec)), "want Ed25519"},
		{"a public key", string(read(pub)), `a PEM "PUBLIC KEY" block: want "PRIVATE KEY"`},
		{"a 31-byte seed", base64.StdEncoding.EncodeToString(k.Seed()[:31]), "neither a PEM PRIVATE KEY block nor the base64 of a 32-byte Ed25519 seed"},
		{"text", "hunter2-secret-words", "neither a PEM"},
		{"a damaged PEM", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "a PKCS#8 block that does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSigningKey([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			for _, line := range strings.Split(tc.in, "\n") {
				if len(line) > 8 && !strings.HasPrefix(line, "-----") && strings.Contains(err.Error(), line) {
					t.Errorf("the error holds the key's bytes: %v", err)
				}
			}
		})
	}
	if _, err := ParsePublicKey(read(priv)); err == nil || !strings.Contains(err.Error(), `want "PUBLIC KEY"`) {
		t.Errorf("ParsePublicKey of a private key: %v", err)
	}
}

// TestScorecardEnvelope: a signed envelope decodes and verifies; a
// changed payload, another key, no signature, another payloadType and
// another scorecard_version do not.
func TestScorecardEnvelope(t *testing.T) {
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	rto := 12.5
	sc := &Scorecard{ScorecardVersion: ScorecardVersion, Tool: "kafkastreams-dr", ApplicationID: "app", RestoreID: "r",
		Figures: ScorecardFigures{RTO: ScorecardFigure{Name: "rto", Seconds: &rto}}}
	b, err := NewScorecardEnvelope(sc, k)
	if err != nil {
		t.Fatal(err)
	}
	env, got, err := DecodeScorecardEnvelope(b)
	if err != nil || *got.Figures.RTO.Seconds != rto {
		t.Fatalf("decode: %+v, %v", got, err)
	}
	pub, otherPub := k.Public().(ed25519.PublicKey), other.Public().(ed25519.PublicKey)
	if id, err := env.Verify([]ed25519.PublicKey{otherPub, pub}); err != nil || id != KeyID(pub) {
		t.Errorf("Verify = %s, %v", id, err)
	}
	if _, err := env.Verify([]ed25519.PublicKey{otherPub}); !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), KeyID(pub)) {
		t.Errorf("Verify with another key: %v", err)
	}
	changed := *env
	changed.Payload = bytes.Replace(env.Payload, []byte("12.5"), []byte("2.5"), 1)
	if _, err := changed.Verify([]ed25519.PublicKey{pub}); !errors.Is(err, ErrBadSignature) {
		t.Errorf("Verify of a changed payload: %v", err)
	}
	noID := *env
	noID.Signatures = []ScorecardSignature{{Sig: env.Signatures[0].Sig}} // DSSE: keyid is optional
	if _, err := noID.Verify([]ed25519.PublicKey{pub}); err != nil {
		t.Errorf("Verify of a signature without keyid: %v", err)
	}
	unsigned, err := NewScorecardEnvelope(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	uenv, _, err := DecodeScorecardEnvelope(unsigned)
	if err != nil || !strings.Contains(string(unsigned), `"signatures": []`) {
		t.Fatalf("unsigned: %v\n%s", err, unsigned)
	}
	if _, err := uenv.Verify([]ed25519.PublicKey{pub}); !errors.Is(err, ErrUnsigned) {
		t.Errorf("Verify of an unsigned envelope: %v", err)
	}

	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"another payloadType", func(m map[string]any) { m["payloadType"] = "application/vnd.in-toto+json" }, `payloadType "application/vnd.in-toto+json"`},
		{"version 2", func(m map[string]any) {
			m["payload"] = base64.StdEncoding.EncodeToString([]byte(`{"scorecard_version":2}`))
		}, "scorecard_version 2: this kafkastreams-dr reads version 1 only"},
		{"a payload that is not JSON", func(m map[string]any) { m["payload"] = base64.StdEncoding.EncodeToString([]byte("{")) }, "the envelope's payload is not a scorecard"},
		{"a payload that is not base64", func(m map[string]any) { m["payload"] = "%%%" }, "not a scorecard envelope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]any{}
			for k, v := range raw {
				m[k] = v
			}
			tc.edit(m)
			b, _ := json.Marshal(m)
			if _, _, err := DecodeScorecardEnvelope(b); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// goldenScorecard is a scorecard with every field set.
func goldenScorecard() *Scorecard {
	at := time.Date(2026, 12, 2, 7, 8, 7, 48_000_000, time.UTC)
	s := func(f float64) *float64 { return &f }
	return &Scorecard{
		ScorecardVersion: ScorecardVersion, Tool: "kafkastreams-dr", ToolVersion: "v1.0.0",
		DrillID: "20261202T070807.048Z-b91c92b0", ApplicationID: "order-processor", BackupID: "20261202T070807.052Z-40070c03",
		RestoreID: "20261202T070807.173Z-8acd95d8", Strategy: StrategyChangelog,
		StartedAt: at, LostAt: at.Add(500 * time.Millisecond), CutAt: at.Add(100 * time.Millisecond), FinishedAt: at.Add(2 * time.Second), OK: true,
		Figures: ScorecardFigures{
			RTO:             ScorecardFigure{Name: "rto", Seconds: s(1.156), Definition: "from the start of the drill to the restored records verified"},
			RTODataRestored: ScorecardFigure{Name: "rto_data_restored", Seconds: s(0.625), Definition: "from lost_at to the restored records verified"},
			RTOAppRunning:   ScorecardFigure{Name: "rto_app_running", Definition: "from lost_at to the application running"},
			RTOAppCaughtUp:  ScorecardFigure{Name: "rto_app_caught_up", Definition: "from lost_at to the application caught up"},
			RPO:             ScorecardFigure{Name: "rpo", Seconds: s(0.4), Definition: "lost_at - cut_at"},
		},
		Volume: ScorecardVolume{Topics: 8, Partitions: 15, Records: 105, Bytes: 3087, RecordsRestored: 105, RecordsVerified: 105},
		States: []ScorecardState{{Store: "customers", Topic: "customers", Result: StateDigestEqual, Equal: true}},
		Phases: []ScorecardPhase{{Name: "restore", Status: "passed", DurationSeconds: 0.544}},
		Binding: ScorecardBinding{
			RestoreReportKey: RestoreReportKey("20261202T070807.173Z-8acd95d8"), RestoreReportSHA256: strings.Repeat("6f", 32),
			ManifestKey: ManifestKey("20261202T070807.052Z-40070c03"), ManifestSHA256: strings.Repeat("0c", 32),
		},
	}
}

// TestScorecardGolden pins a signed scorecard's envelope byte for byte
// (Ed25519 is deterministic: a fixed seed signs the same bytes alike), so
// that the payload's encoding, the PAE and the key id never change
// unnoticed; -update rewrites it.
func TestScorecardGolden(t *testing.T) {
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x5c}, ed25519.SeedSize))
	b, err := NewScorecardEnvelope(goldenScorecard(), k)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	path := filepath.Join("testdata", "scorecard-v1.golden.json")
	if *update {
		os.WriteFile(path, b, 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("the scorecard's envelope changed (docs/FORMAT.md is the contract):\n%s", b)
	}
	env, sc, err := DecodeScorecardEnvelope(want)
	if err != nil || !reflect.DeepEqual(sc, goldenScorecard()) {
		t.Fatalf("decoded %+v, %v", sc, err)
	}
	if _, err := env.Verify([]ed25519.PublicKey{k.Public().(ed25519.PublicKey)}); err != nil {
		t.Fatal(err)
	}
}
