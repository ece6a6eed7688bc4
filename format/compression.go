package format

import (
	"fmt"
	"strings"

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
