// Package kgolog gives franz-go clients the run's slog logger (through
// plugin/kslog), filtered so that franz-go's informational lines, about
// connections and telemetry rather than the run, show only at debug level.
package kgolog

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"
)

// Opt is the kgo option that logs through log: warnings and errors only,
// unless log has debug enabled.
func Opt(log *slog.Logger) kgo.Opt { return kgo.WithLogger(kslog.New(Filter(log))) }

// Filter returns log itself when debug is enabled, else a logger on the
// same handler that drops records below warn.
func Filter(log *slog.Logger) *slog.Logger {
	if log.Enabled(context.Background(), slog.LevelDebug) {
		return log
	}
	return slog.New(minLevel{log.Handler(), slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(n string) slog.Handler { return minLevel{h.Handler.WithGroup(n), h.min} }
