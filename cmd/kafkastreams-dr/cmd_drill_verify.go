package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// drillVerifyReportOptions are the flags of `drill verify-report`.
type drillVerifyReportOptions struct {
	File           string   // the scorecard
	DrillID        string   // --drill-id: the repository's drills/<drill-id>/scorecard.json instead of File
	PublicKeyFiles []string // --public-key-file, repeatable
	ConfigFile     string   // -c: check the binding against this repository
	JSON           bool

	cfg *config.Config // -c, loaded
}

const drillVerifyReportLong = `Check a drill's scorecard (drill --scorecard FILE; or, with --drill-id ID -c FILE, the one
the drill stored in the repository, drills/<drill-id>/scorecard.json): that it is a
scorecard envelope (DSSE: payloadType, payload, signatures) whose payload decodes; with --public-key-file, that it is signed and that a signature by
that key (PEM SPKI: openssl pkey -in key.pem -pubout) verifies over the payload's exact
bytes; with -c, that the restore it names is in that repository and its report
(restores/<restore-id>/report.json, which holds the restore's plan) and the backup's
manifest have the SHA-256 the scorecard was bound to; with --drill-id, that the scorecard
stored there is drill ID's. Give --public-key-file, -c, or both.

Without --public-key-file the signature is NOT CHECKED, and a line says so: a signed
scorecard then exits 2 (give its key to check its figures); an unsigned one checked for
its binding ends "binding valid; the scorecard is unsigned: its figures are not proven",
exit 0: the binding proves which restore it names, not its figures.

Every check is printed, one line each; the first that fails is the error. A valid
scorecard of a drill that failed is valid evidence of a failed drill: exit 0, and its
result is printed. What a scorecard proves, and what it does not: docs/OPERATIONS.md,
"Drill evidence".

EXIT STATUS of verify-report: 0 when every check passed; 2 when one failed: FILE is not
a scorecard (malformed, another payloadType or scorecard_version), --drill-id's scorecard
is another drill's, it is signed and no --public-key-file was given, it is not signed
while --public-key-file asks for a signature, it is signed by another key (the key ids
are printed), its signature does not verify (the payload was changed, or the signature
is another scorecard's), the restore or backup it names is not in the repository, or an
object's SHA-256 differs (a scorecard of another restore, or a changed report or
manifest); 2 for usage errors; 1 when the repository cannot be read.

CONFIG KEYS USED (with -c)
  application_id, storage.* (the repository, opened read-only).`

func newDrillVerifyReportCmd(s *iostreams, runF func(context.Context, *drillVerifyReportOptions, *iostreams) error) *cobra.Command {
	o := &drillVerifyReportOptions{}
	cmd := &cobra.Command{
		Use:   "verify-report {FILE | --drill-id ID -c FILE} [--public-key-file F] [-c FILE]",
		Short: "Check a drill scorecard's signature and its binding to the restore",
		Long:  drillVerifyReportLong,
		Example: `  kafkastreams-dr drill verify-report drill-scorecard.json --public-key-file drill-signing.pub.pem -c order-processor.yaml
  kafkastreams-dr drill verify-report drill-scorecard.json -c order-processor.yaml   # binding only (an unsigned scorecard: its figures are not proven)
  kafkastreams-dr drill verify-report --drill-id 20261202T070807.048Z-b91c92b0 -c order-processor.yaml --public-key-file drill-signing.pub.pem`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && o.DrillID != "":
				return &usageError{errors.New("give the scorecard FILE or --drill-id ID, not both")}
			case len(args) == 1:
				o.File = args[0]
			case o.DrillID == "":
				return &usageError{errors.New("no scorecard: give its FILE (drill --scorecard FILE), or --drill-id ID -c FILE for the one in the repository")}
			case o.ConfigFile == "":
				return &usageError{fmt.Errorf("--drill-id %s reads drills/%s/scorecard.json in the repository: give -c FILE", o.DrillID, o.DrillID)}
			case !format.ValidBackupID(o.DrillID):
				return &usageError{fmt.Errorf("--drill-id %q is not a drill id (the form of a backup id; drill history -c FILE lists them)", o.DrillID)}
			default:
				o.File = format.ScorecardKey(o.DrillID)
			}
			if len(o.PublicKeyFiles) == 0 && o.ConfigFile == "" {
				return &usageError{errors.New("nothing to check: give --public-key-file F (the signature), -c FILE (the binding to the restore in that repository), or both")}
			}
			if runF != nil {
				return runF(cmd.Context(), o, s)
			}
			return runDrillVerifyReport(cmd.Context(), o, s)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.PublicKeyFiles, "public-key-file", nil, "require a valid signature by the Ed25519 public key in `FILE` (PEM PUBLIC KEY); repeat for several keys, any one suffices")
	f.StringVarP(&o.ConfigFile, "config", "c", "", "check the binding against the repository of config `FILE` (storage.*)")
	f.StringVar(&o.DrillID, "drill-id", "", "check the scorecard the drill `ID` stored in the repository (drills/<drill-id>/scorecard.json; needs -c)")
	f.BoolVar(&o.JSON, "json", false, "print the checks and the scorecard as JSON")
	return cmd
}

// scorecardCheck is one check of verify-report.
type scorecardCheck struct {
	Name   string `json:"name"` // envelope, signature, restore report, manifest
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// NotChecked: the check was not made (the signature, without
	// --public-key-file); OK says whether that is acceptable.
	NotChecked bool `json:"not_checked,omitempty"`
}

// verifyReportResult is what verify-report prints with --json.
type verifyReportResult struct {
	File  string `json:"file"`
	Valid bool   `json:"valid"`
	// SignatureChecked: a --public-key-file was given and the signature
	// checked; false, a valid scorecard's figures are not proven.
	SignatureChecked bool              `json:"signature_checked"`
	Checks           []scorecardCheck  `json:"checks"`
	Scorecard        *format.Scorecard `json:"scorecard,omitempty"`
}

func runDrillVerifyReport(ctx context.Context, o *drillVerifyReportOptions, s *iostreams) error {
	var keys []ed25519.PublicKey
	for _, f := range o.PublicKeyFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("--public-key-file %s: %w", f, errors.Unwrap(err)), "")
		}
		k, err := format.ParsePublicKey(b)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("--public-key-file %s: %v", f, err), "")
		}
		keys = append(keys, k)
	}
	var store storage.Backend
	if o.ConfigFile != "" {
		cfg, err := loadRepositoryConfig(o.ConfigFile, s)
		if err != nil {
			return err
		}
		if store, err = openExistingStorage(ctx, cfg.Storage, "drill verify-report"); err != nil {
			return storageError(err)
		}
		o.cfg = cfg
	}
	var b []byte
	var err error
	if o.DrillID != "" {
		b, err = repository.LoadScorecard(ctx, store, o.DrillID)
		if errors.Is(err, storage.ErrNotFound) {
			return withCode(exitUsage, fmt.Errorf("%s has no scorecard of drill %s (no %s)", store.Location(), o.DrillID, o.File),
				"see the recorded drills with kafkastreams-dr drill history -c "+quoteArgs([]string{o.ConfigFile})[0]+" (drills before issue 15 have none)")
		}
		if err != nil {
			return repositoryError(err, store.Location())
		}
	} else if b, err = os.ReadFile(o.File); err != nil {
		return withCode(exitUsage, fmt.Errorf("verify-report %s: %w", o.File, errors.Unwrap(err)), "name the scorecard a drill wrote (drill --scorecard FILE)")
	}
	res := &verifyReportResult{File: o.File}
	env, sc, err := format.DecodeScorecardEnvelope(b)
	if err != nil {
		res.Checks = append(res.Checks, scorecardCheck{Name: "envelope", Detail: err.Error()})
		return finishVerifyReport(s, o, res)
	}
	res.Scorecard = sc
	if o.DrillID != "" && sc.DrillID != o.DrillID {
		// A scorecard copied over another drill's (issue 15): its
		// signature and binding are its own drill's, and would pass.
		res.Checks = append(res.Checks, scorecardCheck{Name: "envelope", Detail: fmt.Sprintf("%s is the scorecard of drill %s, not %s", o.File, orNone(sc.DrillID), o.DrillID)})
		return finishVerifyReport(s, o, res)
	}
	res.Checks = append(res.Checks, scorecardCheck{Name: "envelope", OK: true, Detail: fmt.Sprintf("scorecard of drill %s of %s: backup %s, restore %s, %s", orNone(sc.DrillID), sc.ApplicationID, orNone(sc.BackupID), orNone(sc.RestoreID), drillResult(sc))})
	if len(keys) > 0 {
		res.Checks = append(res.Checks, signatureCheck(env, keys))
		res.SignatureChecked = true
	}
	if store != nil {
		checks, err := bindingChecks(ctx, o.cfg, store, sc)
		if err != nil {
			return err
		}
		res.Checks = append(res.Checks, checks...)
	}
	if len(keys) == 0 {
		// Last, so that a binding that fails is the error named.
		res.Checks = append(res.Checks, signatureNotChecked(env))
	}
	return finishVerifyReport(s, o, res)
}

// drillResult is "passed" or "FAILED in phase X" for sc.
func drillResult(sc *format.Scorecard) string {
	if sc.OK {
		return "the drill passed"
	}
	for _, p := range sc.Phases {
		if p.Status == "failed" {
			return "the drill FAILED in phase " + p.Name
		}
	}
	return "the drill FAILED"
}

// signatureNotChecked is the signature line when no --public-key-file was
// given (issue 15: a signed scorecard whose RTO was edited was reported
// valid): a signed envelope fails it (its figures are checked only by its
// key), an unsigned one passes it, its figures unproven.
func signatureNotChecked(env *format.ScorecardEnvelope) scorecardCheck {
	if len(env.Signatures) == 0 {
		return scorecardCheck{Name: "signature", OK: true, NotChecked: true, Detail: "the scorecard is unsigned: its figures are not proven"}
	}
	var ids []string
	for _, sig := range env.Signatures {
		ids = append(ids, sig.KeyID)
	}
	return scorecardCheck{Name: "signature", NotChecked: true, Detail: fmt.Sprintf("the scorecard is signed by key %s: give --public-key-file to check its figures", strings.Join(ids, ", "))}
}

func signatureCheck(env *format.ScorecardEnvelope, keys []ed25519.PublicKey) scorecardCheck {
	c := scorecardCheck{Name: "signature"}
	id, err := env.Verify(keys)
	var given []string
	for _, k := range keys {
		given = append(given, format.KeyID(k))
	}
	switch {
	case err == nil:
		c.OK, c.Detail = true, "valid, by key "+id
	case errors.Is(err, format.ErrUnsigned):
		c.Detail = fmt.Sprintf("%v, and --public-key-file requires a signature (by %s)", err, strings.Join(given, ", "))
	case errors.Is(err, format.ErrUnknownKey):
		c.Detail = fmt.Sprintf("%v; the key given is %s", err, strings.Join(given, ", "))
	default:
		c.Detail = fmt.Sprintf("%v (key %s)", err, strings.Join(given, ", "))
	}
	return c
}

// bindingChecks compare the scorecard's binding with store, the
// repository of cfg: the restore report's and the manifest's SHA-256. An
// error is for a repository that cannot be read.
func bindingChecks(ctx context.Context, cfg *config.Config, store storage.Backend, sc *format.Scorecard) ([]scorecardCheck, error) {
	var checks []scorecardCheck
	if cfg.ApplicationID != "" && sc.ApplicationID != cfg.ApplicationID {
		return append(checks, scorecardCheck{Name: "application", Detail: fmt.Sprintf("the scorecard is of application %q, %s is of %q", sc.ApplicationID, cfg.File(), cfg.ApplicationID)}), nil
	}
	b := sc.Binding
	if b.RestoreReportKey == "" || b.RestoreReportSHA256 == "" {
		checks = append(checks, scorecardCheck{Name: "restore report", Detail: "the scorecard is bound to no restore (its drill's restore did not finish): it cannot be checked against a repository"})
	} else {
		checks = append(checks, bindingCheck(ctx, store, "restore report", b.RestoreReportKey, format.RestoreReportKey(sc.RestoreID), b.RestoreReportSHA256, "restore "+sc.RestoreID))
	}
	if b.ManifestKey != "" {
		checks = append(checks, bindingCheck(ctx, store, "manifest", b.ManifestKey, format.ManifestKey(sc.BackupID), b.ManifestSHA256, "backup "+sc.BackupID))
	}
	for _, c := range checks {
		if c.Name == "storage" {
			return nil, errors.New(c.Detail)
		}
	}
	return checks, nil
}

// bindingCheck compares the SHA-256 of the object key (which must be
// want, the key the scorecard's ids name) with sum.
func bindingCheck(ctx context.Context, store storage.Backend, name, key, want, sum, what string) scorecardCheck {
	c := scorecardCheck{Name: name}
	if key != want {
		c.Detail = fmt.Sprintf("the scorecard binds %s, not %s of its %s", key, want, what)
		return c
	}
	got, err := repository.ObjectSHA256(ctx, store, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		c.Detail = fmt.Sprintf("%s has no %s (no %s): a scorecard of another repository, or the object was removed", store.Location(), what, key)
	case err != nil:
		c.Name, c.Detail = "storage", err.Error()
	case got != sum:
		c.Detail = fmt.Sprintf("%s has SHA-256 %s, the scorecard was bound to %s: a scorecard of another restore, or %s was changed", key, got, sum, key)
	default:
		c.OK, c.Detail = true, fmt.Sprintf("%s SHA-256 %s, equal", key, got)
	}
	return c
}

func finishVerifyReport(s *iostreams, o *drillVerifyReportOptions, res *verifyReportResult) error {
	var failed *scorecardCheck
	for i := range res.Checks {
		if !res.Checks[i].OK && failed == nil {
			failed = &res.Checks[i]
		}
	}
	res.Valid = failed == nil
	if o.JSON {
		if err := writeJSON(s.Out, res); err != nil {
			return err
		}
	} else {
		printVerifyReport(s.Out, res)
	}
	switch {
	case failed != nil && failed.NotChecked:
		return withCode(exitUsage, fmt.Errorf("scorecard %s: %s NOT CHECKED: %s", o.File, failed.Name, failed.Detail), "")
	case failed != nil:
		return withCode(exitUsage, fmt.Errorf("scorecard %s is not valid: %s: %s", o.File, failed.Name, failed.Detail), "")
	}
	return nil
}

func printVerifyReport(w io.Writer, res *verifyReportResult) {
	tw := newTable(w)
	for _, c := range res.Checks {
		verdict := "ok"
		switch {
		case c.NotChecked:
			verdict = "NOT CHECKED"
		case !c.OK:
			verdict = "FAILED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, verdict, c.Detail)
	}
	tw.Flush()
	switch {
	case res.Valid && !res.SignatureChecked:
		fmt.Fprintf(w, "scorecard %s: binding valid; the scorecard is unsigned: its figures are not proven\n", res.File)
	case res.Valid:
		fmt.Fprintf(w, "scorecard %s is valid\n", res.File)
	case slices.ContainsFunc(res.Checks, func(c scorecardCheck) bool { return c.NotChecked && !c.OK }):
		fmt.Fprintf(w, "scorecard %s is NOT verified: its signature was not checked\n", res.File)
	default:
		fmt.Fprintf(w, "scorecard %s is NOT valid\n", res.File)
	}
}
