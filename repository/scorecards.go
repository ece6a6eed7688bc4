package repository

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/storage"
)

// This file reads and writes what binds a drill's scorecard to the
// repository (docs/FORMAT.md, "Drill scorecards"): the SHA-256 of objects
// as stored, and the scorecard beside the drill's report.

// ObjectSHA256 returns the SHA-256 (lowercase hex) of the object key's
// exact bytes as stored. A storage error is returned as "read <key>: ..."
// (storage.ErrNotFound and storage.ErrTransient stay testable).
func ObjectSHA256(ctx context.Context, store storage.Backend, key string) (string, error) {
	b, err := readWhole(ctx, store, key)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// SaveScorecard stores envelope, a scorecard's envelope as
// format.NewScorecardEnvelope wrote it, as drills/<drillID>/scorecard.json
// (format.ScorecardKey), byte for byte, in one atomic put. A storage error
// is returned as "write drill scorecard <key>: ...".
func SaveScorecard(ctx context.Context, store storage.Backend, drillID string, envelope []byte) error {
	if !format.ValidBackupID(drillID) {
		return fmt.Errorf("write drill scorecard: drill id %q does not have the form of a backup id", drillID)
	}
	key := format.ScorecardKey(drillID)
	if err := store.Put(ctx, key, bytes.NewReader(envelope), int64(len(envelope))); err != nil {
		return fmt.Errorf("write drill scorecard %s: %w", key, err)
	}
	return nil
}

// LoadScorecard returns the bytes of the scorecard of the drill drillID
// (format.ScorecardKey) as stored. A storage error is returned as "read
// <key>: ..." (storage.ErrNotFound and storage.ErrTransient stay
// testable).
func LoadScorecard(ctx context.Context, store storage.Backend, drillID string) ([]byte, error) {
	return readWhole(ctx, store, format.ScorecardKey(drillID))
}
