package format

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// CompressionLevel is the zstd level of a record-mode segment, by the
// names of klauspost/compress's zstd.EncoderLevel (EncoderLevelFromString):
// "fastest" (about zstd -1), "default" (about -3), "better" (about -7) and
// "best" (about -11). Its zero value "" is CompressionDefault. The level
// changes only how hard the writer works: every level writes a standard
// zstd frame that any decoder reads without knowing it, so it is not
// recorded in the manifest.
type CompressionLevel string

// The compression levels, fastest first.
const (
	CompressionFastest CompressionLevel = "fastest"
	CompressionDefault CompressionLevel = "default"
	CompressionBetter  CompressionLevel = "better"
	CompressionBest    CompressionLevel = "best"
)

// CompressionLevels are the valid levels, fastest first.
var CompressionLevels = []CompressionLevel{CompressionFastest, CompressionDefault, CompressionBetter, CompressionBest}

// ParseCompressionLevel returns the level named s ("" is
// CompressionDefault), or an error naming s and the valid names.
func ParseCompressionLevel(s string) (CompressionLevel, error) {
	if s == "" {
		return CompressionDefault, nil
	}
	for _, l := range CompressionLevels {
		if string(l) == s {
			return l, nil
		}
	}
	return "", fmt.Errorf("compression level %q is not one of %s", s, CompressionLevelNames())
}

// CompressionLevelNames lists the valid levels for messages:
// "fastest, default, better or best".
func CompressionLevelNames() string {
	names := make([]string, len(CompressionLevels))
	for i, l := range CompressionLevels {
		names[i] = string(l)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// encoders holds, per zstd.EncoderLevel, the encoders of closed segment
// writers: a backup of thousands of small partitions made a new encoder
// (its tables and window, about 1 MiB) for every segment, 8% of its CPU
// (issue 13). An encoder is Reset before reuse, so its output is the same
// as a new one's.
var encoders sync.Map // zstd.EncoderLevel -> *sync.Pool

// encoder returns a zstd encoder at level l writing to w: a pooled one
// Reset to w, or a new one. Every level has the same options: CRC, one
// goroutine, a 1 MiB window, the lower-memory mode (the memory per
// partition in flight does not grow with the level).
func (l CompressionLevel) encoder(w io.Writer) (*zstd.Encoder, error) {
	zl, err := l.zstd()
	if err != nil {
		return nil, err
	}
	if p, ok := encoders.Load(zl); ok {
		if e, ok := p.(*sync.Pool).Get().(*zstd.Encoder); ok {
			e.Reset(w)
			return e, nil
		}
	}
	return zstd.NewWriter(w, zstd.WithEncoderCRC(true), zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderLevel(zl), zstd.WithWindowSize(segmentWindow), zstd.WithLowerEncoderMem(true))
}

// releaseEncoder returns e, made by l.encoder and whose frame was closed
// without error, to the pool of its level.
func (l CompressionLevel) releaseEncoder(e *zstd.Encoder) {
	zl, err := l.zstd()
	if err != nil {
		return
	}
	e.Reset(nil) // drops the reference to the segment's writer
	p, _ := encoders.LoadOrStore(zl, &sync.Pool{})
	p.(*sync.Pool).Put(e)
}

// zstd is the encoder level of l; an unknown level is refused.
func (l CompressionLevel) zstd() (zstd.EncoderLevel, error) {
	switch l {
	case CompressionFastest:
		return zstd.SpeedFastest, nil
	case CompressionDefault, "":
		return zstd.SpeedDefault, nil
	case CompressionBetter:
		return zstd.SpeedBetterCompression, nil
	case CompressionBest:
		return zstd.SpeedBestCompression, nil
	}
	return 0, fmt.Errorf("segment: compression level %q is not one of %s", string(l), CompressionLevelNames())
}
