package config

import (
	"fmt"
	"strings"

	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// excludes checks what source.topics.exclude (key is "source.topics")
// takes away from source.topics.include, as far as the file alone tells:
// an include item is removed by an exclude item that is the same pattern,
// or that matches it when it is a literal topic name (an exclude beats an
// include: topicfilter.Filter.Match). When every include item is removed a
// backup selects nothing and refuses to run, so it is an error naming the
// first exclude item that removed one; when some are, each is a warning.
// A glob include that an exclude only narrows is not judged here: which
// topics remain depends on the cluster (see "kafkastreams-dr topics").
// Patterns that do not compile are left to patterns.
func (v *validator) excludes(key string, t Topics) {
	if len(t.Include) == 0 || len(t.Exclude) == 0 {
		return
	}
	removedBy := make([]int, len(t.Include)) // index into t.Exclude, -1: not removed
	every := true
	for i, inc := range t.Include {
		removedBy[i] = -1
		for j, exc := range t.Exclude {
			if inc == exc || !topicfilter.IsPattern(inc) && matches(exc, inc) {
				removedBy[i] = j
				break
			}
		}
		every = every && removedBy[i] >= 0
	}
	if every {
		j := removedBy[0]
		k := fmt.Sprintf("%s.exclude[%d]", key, j)
		v.errf(k, "%s %q removes every included topic (%s.include [%s]): a backup with this config selects nothing; remove it from %s.exclude or include other topics",
			k, t.Exclude[j], key, strings.Join(t.Include, ", "), key)
		return
	}
	for i, j := range removedBy {
		if j >= 0 {
			v.warnf(fmt.Sprintf("%s.include[%d]", key, i), "%s.include[%d] %q is excluded by %s.exclude[%d] %q: it is never backed up",
				key, i, t.Include[i], key, j, t.Exclude[j])
		}
	}
}

// matches reports whether the single pattern p matches topic name, false
// when p does not compile.
func matches(p, name string) bool {
	f, err := topicfilter.NewFilter([]string{p}, nil)
	return err == nil && f.Match(name)
}
