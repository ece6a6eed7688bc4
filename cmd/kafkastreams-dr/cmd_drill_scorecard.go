package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kafkastreams-dr/kafkastreams-dr/drill"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// This file is the drill's scorecard (--scorecard FILE, --sign-key-file F,
// KDR_SIGN_KEY): docs/FORMAT.md, "Drill scorecards", and docs/OPERATIONS.md,
// "Drill evidence".

// signKeyEnv is the environment variable that holds the drill's signing
// key when --sign-key-file is not given: a PEM PRIVATE KEY block or the
// base64 of a 32-byte Ed25519 seed.
const signKeyEnv = "KDR_SIGN_KEY"

// scorecardUsage and signKeyUsage are the help of --scorecard and
// --sign-key-file.
const (
	scorecardUsage = "also write the drill's scorecard (JSON in a DSSE envelope, bound to the restore by SHA-256; see docs/FORMAT.md) to `FILE`; its directory must exist"
	signKeyUsage   = "sign the scorecard with the Ed25519 private key in `FILE` (PEM PKCS#8, openssl genpkey -algorithm ed25519; or a base64 32-byte seed) (default: $" + signKeyEnv + ", else unsigned)"
)

// completeScorecard checks --scorecard and reads the signing key
// (--sign-key-file, else $KDR_SIGN_KEY) before the drill starts: a
// --scorecard that is a directory or in a directory that does not exist,
// and a key that cannot be read or parsed, exit 2 naming the flag or the
// variable, never the key's bytes.
func (o *drillOptions) completeScorecard() error {
	if o.Scorecard != "" {
		if fi, err := os.Stat(o.Scorecard); err == nil && fi.IsDir() {
			return &usageError{fmt.Errorf("--scorecard %s is a directory: --scorecard names the JSON file to write", o.Scorecard)}
		}
		if fi, err := os.Stat(filepath.Dir(o.Scorecard)); err != nil || !fi.IsDir() {
			return &usageError{fmt.Errorf("--scorecard %s: the directory %s does not exist (the drill does not create it)", o.Scorecard, filepath.Dir(o.Scorecard))}
		}
	}
	var b []byte
	from := ""
	switch {
	case o.SignKeyFile != "":
		from = "--sign-key-file " + o.SignKeyFile
		var err error
		if b, err = os.ReadFile(o.SignKeyFile); err != nil {
			return &usageError{fmt.Errorf("%s: cannot read the signing key: %w", from, errors.Unwrap(err))}
		}
	case os.Getenv(signKeyEnv) != "":
		from, b = "$"+signKeyEnv, []byte(os.Getenv(signKeyEnv))
	default:
		return nil
	}
	k, err := format.ParseSigningKey(b)
	if err != nil {
		return &usageError{fmt.Errorf("%s: not an Ed25519 signing key: %v; make one with: openssl genpkey -algorithm ed25519 -out drill-signing.pem", from, err)}
	}
	o.signKey = k
	return nil
}

// scorecardAfter writes the scorecard of the finished drill rep (passed or
// failed) to --scorecard and to the repository beside the drill's report
// (drills/<drill-id>/scorecard.json, when the drill recorded its report),
// signed when a key was given, and returns outcome, the drill's own
// result. A scorecard that cannot be written is the error when the drill
// passed (exit 1), and a warning on stderr when it failed.
func scorecardAfter(ctx context.Context, s *iostreams, o *drillOptions, store storage.Backend, rep *drill.Report, outcome error) error {
	err := writeScorecard(ctx, s, o, store, rep)
	if err == nil {
		return outcome
	}
	if outcome != nil {
		fmt.Fprintf(s.ErrOut, "warning: %v\n", err)
		return outcome
	}
	return withCode(exitError, err, "the drill passed; run it again to get its scorecard (check --scorecard's directory and the repository)")
}

func writeScorecard(ctx context.Context, s *iostreams, o *drillOptions, store storage.Backend, rep *drill.Report) error {
	if o.Scorecard == "" && rep.DrillReportKey == "" {
		return nil
	}
	sc, err := drill.NewScorecard(ctx, store, rep, version)
	if err != nil {
		return err
	}
	env, err := format.NewScorecardEnvelope(sc, o.signKey)
	if err != nil {
		return err
	}
	signed := "unsigned"
	if o.signKey != nil {
		signed = "signed by key " + format.KeyID(o.signKey.Public().(ed25519.PublicKey))
	}
	if rep.DrillReportKey != "" {
		if err := repository.SaveScorecard(ctx, store, rep.DrillID, env); err != nil {
			return fmt.Errorf("scorecard: %w", err)
		}
	}
	if o.Scorecard != "" {
		if err := writeFileAtomic(o.Scorecard, env); err != nil {
			return fmt.Errorf("--scorecard: %w", err)
		}
		check := "--public-key-file PUBLIC-KEY.pem"
		if o.signKey == nil {
			check = "" // nothing to check but the binding
		}
		if o.ConfigFile != "" {
			check = strings.TrimSpace(check + " -c " + quoteArgs([]string{o.ConfigFile})[0])
		}
		if check != "" {
			check = "; check it with kafkastreams-dr drill verify-report " + quoteArgs([]string{o.Scorecard})[0] + " " + check
		}
		fmt.Fprintf(s.ErrOut, "scorecard: %s (%s%s)\n", o.Scorecard, signed, check)
	}
	return nil
}

// writeFileAtomic writes b to file through a temporary file in its
// directory, renamed over it: never half-written.
func writeFileAtomic(file string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), file)
}
