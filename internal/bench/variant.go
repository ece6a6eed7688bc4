package bench

import (
	"fmt"
	"strings"
)

// ParseVariants reads BENCH_VARIANTS: variants separated by ";", each
// NAME:backup.KEY=VALUE[,backup.KEY=VALUE...], for keys of the config's
// backup: section, e.g. "batch:backup.segment_kind=batch;zstd1:backup.compression=zstd".
// The variants run after the default one (Variants[0]). An empty string is
// no variant; a malformed one is an error naming it and the form.
func ParseVariants(s string) ([]Variant, error) {
	var out []Variant
	for _, spec := range strings.Split(s, ";") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		name, keys, ok := strings.Cut(spec, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " /[]") {
			return nil, fmt.Errorf("BENCH_VARIANTS %q: want NAME:backup.KEY=VALUE[,backup.KEY=VALUE...], NAME without spaces, / or brackets", spec)
		}
		v := Variant{Name: name, BackupConfig: map[string]string{}}
		for _, kv := range strings.Split(keys, ",") {
			k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
			key, isBackup := strings.CutPrefix(k, "backup.")
			if !ok || !isBackup || key == "" || strings.ContainsAny(key+val, "\n:#") || val == "" {
				return nil, fmt.Errorf("BENCH_VARIANTS %q: %q is not backup.KEY=VALUE (a key of the config's backup: section, a plain value)", spec, kv)
			}
			v.BackupConfig[key] = val
		}
		out = append(out, v)
	}
	return out, nil
}
