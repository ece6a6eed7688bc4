package bench

import (
	"fmt"
	"strings"
)

// ParseVariants reads BENCH_VARIANTS: variants separated by ";", each
// NAME:SECTION.KEY=VALUE[,SECTION.KEY=VALUE...], for keys of the config's
// backup: or storage: section, e.g.
// "batch:backup.segment_kind=batch;buf32:storage.upload_buffer_bytes=32MiB".
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
			return nil, fmt.Errorf("BENCH_VARIANTS %q: want NAME:backup.KEY=VALUE[,storage.KEY=VALUE...], NAME without spaces, / or brackets", spec)
		}
		v := Variant{Name: name, BackupConfig: map[string]string{}, StorageConfig: map[string]string{}}
		for _, kv := range strings.Split(keys, ",") {
			k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
			section, key, dotted := strings.Cut(k, ".")
			into := map[string]map[string]string{"backup": v.BackupConfig, "storage": v.StorageConfig}[section]
			if !ok || !dotted || into == nil || key == "" || strings.ContainsAny(key+val, "\n:#") || val == "" {
				return nil, fmt.Errorf("BENCH_VARIANTS %q: %q is not backup.KEY=VALUE or storage.KEY=VALUE (a key of that section of the config, a plain value)", spec, kv)
			}
			into[key] = val
		}
		out = append(out, v)
	}
	return out, nil
}
