package repository

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// This file reads and writes the reports drills keep under drills/
// (docs/FORMAT.md, "Drill reports"): what each drill measured. The drill
// writes them; estimate reads them to project a recovery.

// SaveDrillReport stores rep as drills/<rep.DrillID>/report.json
// (format.DrillReportKey), indented JSON, in one atomic put. A storage
// error is returned as "write drill report <key>: ..."
// (storage.ErrTransient stays testable).
func SaveDrillReport(ctx context.Context, store storage.Backend, rep *format.DrillReport) error {
	if !format.ValidBackupID(rep.DrillID) {
		return fmt.Errorf("write drill report: drill id %q does not have the form of a backup id", rep.DrillID)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	key := format.DrillReportKey(rep.DrillID)
	if err := store.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("write drill report %s: %w", key, err)
	}
	return nil
}

// ErrUnreadableDrillReport is wrapped by LoadDrillReport's error when the
// report was read in full but does not decode (truncated, overwritten),
// and when it is encrypted with a key the keyring does not hold
// (storage.ErrNoKey, wrapped too: a key dropped after a rotation). Test
// with errors.Is. A storage failure reading it never wraps it.
var ErrUnreadableDrillReport = errors.New("unreadable drill report")

// unreadableDrillReportError is LoadDrillReport's error for a report that
// does not decode: the project's wording, wrapping ErrUnreadableDrillReport
// and the decoder's error.
type unreadableDrillReportError struct {
	msg string
	err error
}

func (e *unreadableDrillReportError) Error() string { return e.msg }
func (e *unreadableDrillReportError) Unwrap() []error {
	return []error{ErrUnreadableDrillReport, e.err}
}

// LoadDrillReport reads the report of the drill drillID. A storage error
// is returned as "read <key>: ..." (storage.ErrNotFound and
// storage.ErrTransient stay testable), a report that does not decode as
// "drill report <key> is damaged: <what is wrong (format.JSONError)>; ...",
// wrapping ErrUnreadableDrillReport; so is a report that is not a regular
// file (storage.ErrNotRegular), JSON whose drill_id is not drillID
// (not a drill report, or another drill's), and a report encrypted with a
// key storage.encryption does not hold ("drill report <key> is encrypted
// with key id <id>, ...", wrapping storage.ErrNoKey too).
func LoadDrillReport(ctx context.Context, store storage.Backend, drillID string) (*format.DrillReport, error) {
	key := format.DrillReportKey(drillID)
	b, err := readWhole(ctx, store, key)
	if errors.Is(err, storage.ErrNotRegular) || errors.Is(err, ErrObjectTooLarge) {
		return nil, &unreadableDrillReportError{msg: fmt.Sprintf("drill report %s is damaged: %v; the backups are not affected, and estimate leaves it out of its calibration (remove %s; a new drill writes a new report)",
			key, err, key), err: err}
	}
	if ke, ok := errors.AsType[*storage.KeyError](err); ok {
		// A key dropped after a rotation: the backups need it no more,
		// this record of a drill still does.
		return nil, &unreadableDrillReportError{msg: fmt.Sprintf("drill report %s is encrypted with key id %s, which storage.encryption does not hold (configured key ids: %s); the backups are not affected, and estimate and drill history leave it out: add the key to storage.encryption.previous_keys to read it, or remove %s",
			key, ke.KeyID, keyIDsOrNone(ke.Configured), key), err: err}
	}
	if err != nil {
		return nil, err
	}
	var rep format.DrillReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, &unreadableDrillReportError{msg: fmt.Sprintf("drill report %s is damaged: %v; the backups are not affected, and estimate leaves it out of its calibration (a new drill writes a new report)",
			key, format.JSONError(err)), err: err}
	}
	if rep.DrillID != drillID {
		// Valid JSON that is not this drill's report ({"hello":"x"}):
		// read as a report of no application, drill history dropped it
		// silently (issue 15).
		why := fmt.Sprintf("it is not the report of drill %s (its drill_id is %q)", drillID, rep.DrillID)
		return nil, &unreadableDrillReportError{msg: fmt.Sprintf("drill report %s is damaged: %s; the backups are not affected, and estimate leaves it out of its calibration (a new drill writes a new report)",
			key, why), err: errors.New(why)}
	}
	return &rep, nil
}

// DrillReportIDs returns the ids of the repository's drill reports, newest
// (greatest) first. It lists drills/ and reads nothing; keys that are not
// a report (format.ParseDrillReportKey) are left out. A listing error is
// returned as "list drill reports in <location>: ...".
func DrillReportIDs(ctx context.Context, store storage.Backend) ([]string, error) {
	return listIDs(ctx, store, format.DrillsPrefix(), format.ParseDrillReportKey, "drill reports")
}
