package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/sample"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// openssl runs openssl with args and fails the test when it fails: the
// keys of these tests are made as docs/OPERATIONS.md tells operators to.
func openssl(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
		t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// signingKey makes an Ed25519 key pair with openssl in dir: the PEM
// PKCS#8 private key file and the PEM SPKI public key file.
func signingKey(t *testing.T, dir, name string) (priv, pub string) {
	t.Helper()
	priv, pub = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".pub.pem")
	openssl(t, "genpkey", "-algorithm", "ed25519", "-out", priv)
	openssl(t, "pkey", "-in", priv, "-pubout", "-out", pub)
	return priv, pub
}

// envelopeOf decodes a scorecard file.
func envelopeOf(t *testing.T, file string) (*format.ScorecardEnvelope, *format.Scorecard) {
	t.Helper()
	env, sc, err := format.DecodeScorecardEnvelope([]byte(readFile(t, file)))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return env, sc
}

// writeEnvelope writes env as a scorecard file in dir.
func writeEnvelope(t *testing.T, dir, name string, env *format.ScorecardEnvelope) string {
	t.Helper()
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDrillScorecard is issue 15's acceptance on real drills (kfake
// clusters, a filesystem repository, keys made by openssl): two drills
// write signed scorecards, verify-report passes on them and fails, exit 2
// with the check named, on every kind of tampering; no report holds the
// private key; drill history shows both drills, oldest first.
func TestDrillScorecard(t *testing.T) {
	t.Parallel()
	src := testkit.StartKfake(t, 3)
	if err := sample.Seed(t.Context(), testkit.Client(t, src.Addrs())); err != nil {
		t.Fatal(err)
	}
	target1, target2 := testkit.StartKfake(t, 3), testkit.StartKfake(t, 3)
	repo := t.TempDir()
	cfg := writeFile(t, "app.yaml", fmt.Sprintf(`application_id: order-processor
source_changelog_topics: [customers]
source:
  bootstrap_servers: [%s]
  topics:
    include: [orders, customers, customer-totals, payments, "order-processor-*"]
target:
  bootstrap_servers: [%s]
storage:
  backend: filesystem
  path: %s
`, strings.Join(src.Addrs(), ", "), strings.Join(target1.Addrs(), ", "), repo))
	dir := t.TempDir()
	priv, pub := signingKey(t, dir, "drill-signing")
	_, otherPub := signingKey(t, dir, "other")
	// The second drill signs with a raw base64 seed.
	seedKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	seedFile := filepath.Join(dir, "seed.b64")
	if err := os.WriteFile(seedFile, []byte(base64.StdEncoding.EncodeToString(seedKey.Seed())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	seedPub := filepath.Join(dir, "seed.pub.pem")
	openssl(t, "pkey", "-in", writePKCS8(t, dir, seedKey), "-pubout", "-out", seedPub)

	sc1, sc2 := filepath.Join(dir, "scorecard-1.json"), filepath.Join(dir, "scorecard-2.json")
	code, stdout1, stderr1 := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--json", "--scorecard", sc1, "--sign-key-file", priv)
	if code != exitOK {
		t.Fatalf("drill 1: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout1, stderr1)
	}
	code, stdout2, stderr2 := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--backup-id", "latest",
		"--target-bootstrap-servers", target2.Bootstrap(), "--json", "--scorecard", sc2, "--sign-key-file", seedFile)
	if code != exitOK {
		t.Fatalf("drill 2: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout2, stderr2)
	}
	var rep1, rep2 drill.Report
	if err := json.Unmarshal([]byte(stdout1), &rep1); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(stdout2), &rep2); err != nil {
		t.Fatal(err)
	}

	// What the scorecard holds: the drill's ids and figures, bound to its
	// restore report and manifest as stored.
	env1, card1 := envelopeOf(t, sc1)
	env2, card2 := envelopeOf(t, sc2)
	if card1.DrillID != rep1.DrillID || card1.RestoreID != rep1.RestoreID || card1.BackupID != rep1.BackupID || !card1.OK ||
		card1.Figures.RTODataRestored.Seconds == nil || *card1.Figures.RTODataRestored.Seconds != rep1.RTODataRestored.Seconds() ||
		card1.Figures.RTO.Seconds == nil || card1.Figures.RPO.Seconds == nil || card1.Figures.RTOAppRunning.Seconds != nil ||
		card1.Volume.Records != rep1.Volume.Records || card1.Volume.Bytes != rep1.Volume.Bytes || len(card1.Phases) != 6 ||
		len(card1.States) != 2 || !card1.States[0].Equal || card1.ToolVersion == "" {
		t.Errorf("scorecard 1 %+v\nagainst the report %+v", card1, rep1)
	}
	reportBytes, err := os.ReadFile(filepath.Join(repo, format.RestoreReportKey(rep1.RestoreID)))
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256Hex(reportBytes); card1.Binding.RestoreReportSHA256 != want || card1.Binding.ManifestSHA256 == "" {
		t.Errorf("binding %+v, want restore report SHA-256 %s", card1.Binding, want)
	}
	if card2.RestoreID == card1.RestoreID || card2.Binding.ManifestSHA256 != card1.Binding.ManifestSHA256 {
		t.Errorf("two drills of one backup: restores %s and %s, manifests %s and %s", card1.RestoreID, card2.RestoreID, card1.Binding.ManifestSHA256, card2.Binding.ManifestSHA256)
	}
	if stored := readFile(t, filepath.Join(repo, format.ScorecardKey(rep1.DrillID))); stored != readFile(t, sc1) {
		t.Errorf("the repository's scorecard is not --scorecard's:\n%s", stored)
	}
	if !strings.Contains(stderr1, "scorecard: "+sc1+" (signed by key sha256:") {
		t.Errorf("stderr of drill 1 does not name the scorecard and its key:\n%s", stderr1)
	}

	// Tampered copies.
	flipped := *env1
	flipped.Payload = bytes.Replace(env1.Payload, []byte(`"records_restored":`), []byte(`"records_restored":9`), 1)
	changedRTO := *env1
	{
		var m map[string]any
		if err := json.Unmarshal(env1.Payload, &m); err != nil {
			t.Fatal(err)
		}
		m["figures"].(map[string]any)["rto"].(map[string]any)["seconds"] = 0.5
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		changedRTO.Payload = b
	}
	swapped := *env1
	swapped.Signatures = []format.ScorecardSignature{{KeyID: env1.Signatures[0].KeyID, Sig: env2.Signatures[0].Sig}}
	unsigned := *env1
	unsigned.Signatures = nil
	// card1 moved onto drill 2's restore, unsigned: the binding still
	// names restore 1's report bytes.
	moved := *card1
	moved.RestoreID = card2.RestoreID
	moved.Binding.RestoreReportKey = card2.Binding.RestoreReportKey
	movedEnv, err := format.NewScorecardEnvelope(&moved, nil)
	if err != nil {
		t.Fatal(err)
	}
	movedFile := filepath.Join(dir, "moved.json")
	if err := os.WriteFile(movedFile, movedEnv, 0o600); err != nil {
		t.Fatal(err)
	}
	// Another repository of the same application: drill 1's scorecard
	// checked against it finds no restore there.
	otherCfg := writeFile(t, "other.yaml", strings.Replace(readFile(t, cfg), "path: "+repo, "path: "+t.TempDir(), 1))
	otherApp := writeFile(t, "other-app.yaml", strings.Replace(readFile(t, cfg), "application_id: order-processor", "application_id: other-app", 1))
	notJSON := filepath.Join(dir, "not-json.json")
	if err := os.WriteFile(notJSON, []byte(readFile(t, sc1)[:40]), 0o600); err != nil {
		t.Fatal(err)
	}

	// A copy of the repository where drill 1's (passed) scorecard was
	// copied over drill 2's: its signature and binding are drill 1's.
	copied := t.TempDir()
	if err := os.CopyFS(copied, os.DirFS(repo)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copied, format.ScorecardKey(rep2.DrillID)), []byte(readFile(t, sc1)), 0o600); err != nil {
		t.Fatal(err)
	}
	copiedCfg := writeFile(t, "copied.yaml", strings.Replace(readFile(t, cfg), "path: "+repo, "path: "+copied, 1))

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stdout (valid) or stderr (not)
	}{
		// Issue 15: found by a new user.
		{"another drill's scorecard copied over the drill's", []string{"--drill-id", rep2.DrillID, "--public-key-file", pub, "-c", copiedCfg}, exitUsage,
			"envelope: " + format.ScorecardKey(rep2.DrillID) + " is the scorecard of drill " + rep1.DrillID + ", not " + rep2.DrillID},
		{"a signed scorecard with its RTO changed, binding only", []string{filepath.Join(dir, "rto.json"), "-c", cfg}, exitUsage,
			"signature NOT CHECKED: the scorecard is signed by key " + env1.Signatures[0].KeyID + ": give --public-key-file to check its figures"},
		{"a signed scorecard, binding only", []string{sc1, "-c", cfg}, exitUsage, "give --public-key-file to check its figures"},
		{"unsigned, binding only", []string{filepath.Join(dir, "unsigned.json"), "-c", cfg}, exitOK,
			"signature       NOT CHECKED  the scorecard is unsigned: its figures are not proven\nscorecard " + filepath.Join(dir, "unsigned.json") + ": binding valid; the scorecard is unsigned: its figures are not proven\n"},

		{"valid: signature and binding", []string{sc1, "--public-key-file", pub, "-c", cfg}, exitOK, "scorecard " + sc1 + " is valid"},
		{"valid: seed key, signature only", []string{sc2, "--public-key-file", seedPub}, exitOK, "is valid"},
		{"valid: any of two keys", []string{sc2, "--public-key-file", pub, "--public-key-file", seedPub, "-c", cfg}, exitOK, "is valid"},
		{"valid: the repository's copy", []string{filepath.Join(repo, format.ScorecardKey(rep2.DrillID)), "--public-key-file", seedPub, "-c", cfg}, exitOK, "is valid"},
		{"valid: the repository's copy by its drill id", []string{"--drill-id", rep1.DrillID, "--public-key-file", pub, "-c", cfg}, exitOK, "scorecard " + format.ScorecardKey(rep1.DrillID) + " is valid"},
		{"a drill id of no drill", []string{"--drill-id", "20261202T000000.000Z-00000000", "-c", cfg}, exitUsage, "has no scorecard of drill 20261202T000000.000Z-00000000"},
		{"a drill id without -c", []string{"--drill-id", rep1.DrillID, "--public-key-file", pub}, exitUsage, "give -c FILE"},
		{"a file and a drill id", []string{sc1, "--drill-id", rep1.DrillID, "-c", cfg}, exitUsage, "not both"},
		{"one byte of the payload changed", []string{writeEnvelope(t, dir, "flipped.json", &flipped), "--public-key-file", pub}, exitUsage, "signature: the signature does not verify"},
		{"an RTO changed and re-encoded, not re-signed", []string{writeEnvelope(t, dir, "rto.json", &changedRTO), "--public-key-file", pub, "-c", cfg}, exitUsage, "signature: the signature does not verify"},
		{"another scorecard's signature", []string{writeEnvelope(t, dir, "swapped.json", &swapped), "--public-key-file", pub}, exitUsage, "signature: the signature does not verify"},
		{"signed by another key", []string{sc1, "--public-key-file", otherPub}, exitUsage, "no signature by the given public key: signed by " + env1.Signatures[0].KeyID},
		{"unsigned, a key required", []string{writeEnvelope(t, dir, "unsigned.json", &unsigned), "--public-key-file", pub}, exitUsage, "signature: the scorecard is not signed"},
		{"moved onto another restore", []string{movedFile, "-c", cfg}, exitUsage, "restore report: " + card2.Binding.RestoreReportKey + " has SHA-256 " + card2.Binding.RestoreReportSHA256 + ", the scorecard was bound to " + card1.Binding.RestoreReportSHA256},
		{"another repository", []string{sc1, "-c", otherCfg}, exitUsage, "has no restore " + card1.RestoreID},
		{"another application's config", []string{sc1, "-c", otherApp}, exitUsage, `application: the scorecard is of application "order-processor", ` + otherApp + ` is of "other-app"`},
		{"malformed", []string{notJSON, "--public-key-file", pub}, exitUsage, "envelope: not a scorecard envelope"},
		{"no such file", []string{filepath.Join(dir, "absent.json"), "--public-key-file", pub}, exitUsage, "no such file or directory"},
		{"a private key given as public", []string{sc1, "--public-key-file", priv}, exitUsage, `a PEM "PRIVATE KEY" block: want "PUBLIC KEY"`},
		{"nothing to check", []string{sc1}, exitUsage, "nothing to check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"drill", "verify-report"}, tc.args...)...)
			out := stderr
			if tc.code == exitOK {
				out = stdout
			}
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tc.code, tc.want, stdout, stderr)
			}
			if tc.code != exitOK && strings.Contains(stdout, "is valid") {
				t.Errorf("a failed check printed valid:\n%s", stdout)
			}
		})
	}

	// An independent verifier, as docs/OPERATIONS.md shows auditors:
	// openssl over the PAE built from the envelope's JSON (not through
	// package format), on the scorecard and on a tampered copy.
	t.Run("openssl verifies the signature too", func(t *testing.T) {
		for _, tc := range []struct {
			file string
			ok   bool
		}{{sc1, true}, {filepath.Join(dir, "rto.json"), false}} {
			var raw struct {
				PayloadType string `json:"payloadType"`
				Payload     string `json:"payload"`
				Signatures  []struct {
					Sig string `json:"sig"`
				} `json:"signatures"`
			}
			if err := json.Unmarshal([]byte(readFile(t, tc.file)), &raw); err != nil || len(raw.Signatures) != 1 {
				t.Fatalf("%s: %v", tc.file, err)
			}
			body, err1 := base64.StdEncoding.DecodeString(raw.Payload)
			sig, err2 := base64.StdEncoding.DecodeString(raw.Signatures[0].Sig)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			pae := filepath.Join(t.TempDir(), "pae.bin")
			sigFile := filepath.Join(filepath.Dir(pae), "sig.bin")
			os.WriteFile(pae, fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(raw.PayloadType), raw.PayloadType, len(body), body), 0o600)
			os.WriteFile(sigFile, sig, 0o600)
			out, err := exec.Command("openssl", "pkeyutl", "-verify", "-pubin", "-inkey", pub, "-rawin", "-in", pae, "-sigfile", sigFile).CombinedOutput()
			if (err == nil) != tc.ok {
				t.Errorf("openssl pkeyutl -verify of %s: %v, want ok %v\n%s", tc.file, err, tc.ok, out)
			}
		}
	})

	t.Run("no secret in any report", func(t *testing.T) {
		pemKey := readFile(t, priv)
		body := strings.Join(regexp.MustCompile(`(?m)^[A-Za-z0-9+/=]+$`).FindAllString(pemKey, -1), "")
		der, err := base64.StdEncoding.DecodeString(body)
		if err != nil || len(der) < ed25519.SeedSize {
			t.Fatalf("the PEM key's body %q: %v", body, err)
		}
		seed := der[len(der)-ed25519.SeedSize:] // PKCS#8 Ed25519: the seed is the last 32 bytes
		secrets := map[string][]byte{
			"the PEM body": []byte(body), "the seed (key 1)": seed, "its base64": []byte(base64.StdEncoding.EncodeToString(seed)),
			"the seed (key 2)": seedKey.Seed(), "its base64 (key 2)": []byte(base64.StdEncoding.EncodeToString(seedKey.Seed())),
		}
		outputs := map[string][]byte{"drill 1 stdout": []byte(stdout1), "drill 1 stderr": []byte(stderr1), "drill 2 stdout": []byte(stdout2),
			"drill 2 stderr": []byte(stderr2), "scorecard 1": []byte(readFile(t, sc1)), "scorecard 2": []byte(readFile(t, sc2)),
			"payload 1": env1.Payload, "payload 2": env2.Payload}
		filepath.WalkDir(repo, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(path)
				outputs[path] = b
			}
			return err
		})
		for on, o := range outputs {
			for sn, s := range secrets {
				if bytes.Contains(o, s) {
					t.Errorf("%s holds %s of the private key", on, sn)
				}
			}
		}
		if len(outputs) < 10 {
			t.Errorf("only %d outputs searched", len(outputs))
		}
	})

	t.Run("history", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "drill", "history", "-c", cfg, "--json")
		var res drillHistoryResult
		if code != exitOK || json.Unmarshal([]byte(stdout), &res) != nil {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if len(res.Drills) != 2 || res.Drills[0].DrillID != rep1.DrillID || res.Drills[1].DrillID != rep2.DrillID ||
			res.Drills[0].RTOChange != nil || res.Drills[1].RTOChange == nil || res.Drills[1].RTOName != drill.FigureRTODataRestored ||
			res.Drills[1].RPO == nil || res.Drills[1].Bytes != rep2.Volume.Bytes || res.Drills[1].Topics != rep2.Volume.Topics ||
			res.Trend.Baseline != 1 || res.Trend.Median == nil || *res.Trend.Median != *res.Drills[0].RTO {
			t.Errorf("history %+v", res)
		}
		code, stdout, stderr = runCLI(t, "drill", "history", "-c", cfg)
		for _, re := range []string{
			`(?m)^DRILL +STARTED +RESULT +STRATEGY +RTO +CHANGE +RPO +CHANGE +RECORDS +CHANGE +BYTES +TOPICS +PARTITIONS$`,
			`(?m)^` + rep1.DrillID + ` .* passed +changelog +\d+\.\d{3}s \(data\) +- +\d+\.\d{3}s +- +\d+ +- `,
			`(?m)^` + rep2.DrillID + ` .* passed +changelog +\d+\.\d{3}s \(data\) +[+-]\d+\.\d{3}s +\d+\.\d{3}s +[+-]\d+\.\d{3}s +\d+ +\+0 `,
			`(?m)^RTO (GREW|steady): the latest drill's rto_data_restored is \d+\.\d{3}s, .* of 1 earlier drill \(threshold 20%\)$`,
		} {
			if !regexp.MustCompile(re).MatchString(stdout) {
				t.Errorf("exit %d; stdout does not match %s:\n%s\nstderr:\n%s", code, re, stdout, stderr)
			}
		}
	})
}

// writePKCS8 writes k as a PEM PRIVATE KEY file in dir, as openssl
// genpkey does.
func writePKCS8(t *testing.T, dir string, k ed25519.PrivateKey) string {
	t.Helper()
	p := filepath.Join(dir, fmt.Sprintf("key-%x.pem", k.Public().(ed25519.PublicKey)[:4]))
	if err := os.WriteFile(p, pkcs8PEM(t, k), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// pkcs8PEM is k as a PEM PRIVATE KEY block (PKCS#8).
func pkcs8PEM(t *testing.T, k ed25519.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestDrillSigningKeyRefusedFirst: a signing key that cannot be read or
// is not an Ed25519 private key exits 2 before the drill starts (no
// cluster is contacted: the config's brokers do not exist), naming the
// flag or the variable and never the key's bytes; a --scorecard whose
// directory does not exist too. $KDR_SIGN_KEY is read when
// --sign-key-file is not given.
func TestDrillSigningKeyRefusedFirst(t *testing.T) {
	cfg := writeFile(t, "app.yaml", goodConfig)
	dir := t.TempDir()
	const secret = "c2VjcmV0LXNlY3JldC1zZWNyZXQ=" // base64 of 21 bytes: no seed
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"not a key", "", []string{"--sign-key-file", bad}, "--sign-key-file " + bad + ": not an Ed25519 signing key: neither a PEM PRIVATE KEY block nor the base64 of a 32-byte Ed25519 seed; make one with: openssl genpkey -algorithm ed25519"},
		{"no such file", "", []string{"--sign-key-file", filepath.Join(dir, "absent.pem")}, "cannot read the signing key: no such file or directory"},
		{"not a key in the environment", secret, nil, "$KDR_SIGN_KEY: not an Ed25519 signing key"},
		{"the flag over the environment", secret, []string{"--sign-key-file", bad}, "--sign-key-file " + bad + ": not an Ed25519"},
		{"a scorecard in a directory that does not exist", "", []string{"--scorecard", filepath.Join(dir, "no", "sc.json")}, "the directory " + filepath.Join(dir, "no") + " does not exist"},
		{"a scorecard that is a directory", "", []string{"--scorecard", dir}, "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(signKeyEnv, tc.env)
			code, stdout, stderr := runCLI(t, append([]string{"drill", "-c", cfg}, tc.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want 2 with %q\nstdout:\n%s\nstderr:\n%s", code, tc.want, stdout, stderr)
			}
			if strings.Contains(stdout+stderr, secret) || strings.Contains(stderr, "PHASE") {
				t.Errorf("the key's bytes are printed, or the drill ran:\n%s%s", stdout, stderr)
			}
		})
	}

	t.Run("the environment's key", func(t *testing.T) {
		k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
		t.Setenv(signKeyEnv, string(pkcs8PEM(t, k)))
		o := &drillOptions{}
		if err := o.completeScorecard(); err != nil || !o.signKey.Equal(k) {
			t.Errorf("completeScorecard: %v, key %v", err, o.signKey != nil)
		}
		t.Setenv(signKeyEnv, "")
		o = &drillOptions{}
		if err := o.completeScorecard(); err != nil || o.signKey != nil {
			t.Errorf("no key: %v, key %v", err, o.signKey != nil)
		}
	})
}

// TestDrillHistoryFlagsGrowth: three recorded drills whose RTO grew 50%
// over the median of the two before: the table says RTO GREW, --json sets
// trend.grew, --fail-on-growth exits 1, and a higher threshold holds it.
func TestDrillHistoryFlagsGrowth(t *testing.T) {
	repo := t.TempDir()
	store, err := storage.NewFilesystem(repo)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, rto := range []float64{10, 12, 16.5} {
		r := &format.DrillReport{DrillID: format.NewBackupID(at.Add(time.Duration(i)*time.Hour), [4]byte{byte(i)}), ApplicationID: "order-processor",
			Strategy: format.StrategyChangelog, StartedAt: at.Add(time.Duration(i) * time.Hour), OK: true, RTODataRestored: &rto, RTOAppCaughtUp: &rto}
		if err := repository.SaveDrillReport(t.Context(), store, r); err != nil {
			t.Fatal(err)
		}
	}
	cfg := writeFile(t, "app.yaml", strings.Replace(goodConfig, "path: /tmp/backups", "path: "+repo, 1))
	if !strings.Contains(readFile(t, cfg), repo) {
		t.Fatalf("the config does not name the repository:\n%s", readFile(t, cfg))
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"grew", nil, exitOK, "RTO GREW: the latest drill's rto_app_caught_up is 16.500s, 50% above the median 11.000s of 2 earlier drills (threshold 20%)"},
		{"the change against the previous drill", nil, exitOK, "16.500s (caught up)  +4.500s"},
		{"--fail-on-growth", []string{"--fail-on-growth"}, exitError, "the latest drill's RTO grew 50% over the median of the earlier drills' (more than 20%)"},
		{"a higher threshold", []string{"--rto-growth-threshold", "60", "--fail-on-growth"}, exitOK, "RTO steady: the latest drill's rto_app_caught_up is 16.500s, +50% against the median 11.000s of 2 earlier drills (threshold 60%)"},
		{"--json", []string{"--json"}, exitOK, `"grew": true`},
		{"a negative threshold", []string{"--rto-growth-threshold", "-1"}, exitUsage, "want a percentage of 0 or more"},
		// Issue 15: NaN and ±Inf were accepted, and --json then failed with exit 1.
		{"a NaN threshold", []string{"--json", "--rto-growth-threshold", "NaN"}, exitUsage, "--rto-growth-threshold NaN: want a percentage of 0 or more"},
		{"an infinite threshold", []string{"--json", "--rto-growth-threshold", "+Inf"}, exitUsage, "--rto-growth-threshold +Inf: want a percentage of 0 or more"},
		{"a -Inf threshold", []string{"--rto-growth-threshold", "-Inf"}, exitUsage, "--rto-growth-threshold -Inf: want a percentage of 0 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"drill", "history", "-c", cfg}, tc.args...)...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
}

// TestDrillAppDoesNotGetTheSigningKey is a regression test: the
// application command inherited the drill's environment, $KDR_SIGN_KEY
// (the private key) included, so an application that logs its
// environment (or a shell with set -x) published the key. It gets the
// drill's variables and its own, not the key.
func TestDrillAppDoesNotGetTheSigningKey(t *testing.T) {
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, ed25519.SeedSize))
	seed := base64.StdEncoding.EncodeToString(k.Seed())
	t.Setenv(signKeyEnv, seed)
	cfg, _ := drillAppRepo(t, "")
	target := testkit.StartKfake(t, 1)
	envFile := filepath.Join(t.TempDir(), "env")
	sc := filepath.Join(t.TempDir(), "scorecard.json")
	code, stdout, stderr := runCLI(t, "--log-level", "error", "drill", "-c", cfg, "--backup-id", "latest",
		"--target-bootstrap-servers", target.Bootstrap(), "--app-command", "env > "+envFile+"; exit 3", "--scorecard", sc)
	if code != exitError || !strings.Contains(stderr, "drill FAILED in phase app-running") {
		t.Fatalf("exit %d, want 1 (the command exits at once)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	env := readFile(t, envFile)
	if !strings.Contains(env, drill.EnvBootstrapServers+"=") {
		t.Fatalf("the command's environment lacks %s:\n%s", drill.EnvBootstrapServers, env)
	}
	if strings.Contains(env, signKeyEnv) || strings.Contains(env, seed) {
		t.Errorf("the application command got the signing key ($%s)", signKeyEnv)
	}
	// The failed drill's scorecard is signed with that key all the same.
	envl, card := envelopeOf(t, sc)
	if _, err := envl.Verify([]ed25519.PublicKey{k.Public().(ed25519.PublicKey)}); err != nil || card.OK {
		t.Errorf("the failed drill's scorecard: %v, ok %v", err, card.OK)
	}
}
