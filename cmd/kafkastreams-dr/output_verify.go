// Rendering of verify: what was checked, OK or every problem, and the
// warnings (or --json). Functions here take a writer and plain values; none
// does Kafka or storage I/O.

package main

import (
	"fmt"
	"io"

	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/verify"
)

// writeVerifyResult prints the result of verifying backup backupID in the
// repository at location: the objects and checksums (deep: and decoded
// records) or, againstCluster, the target cluster against the backup; then
// OK or every problem, and the warnings. asJSON prints res as JSON.
func writeVerifyResult(w io.Writer, asJSON bool, backupID, location string, deep, againstCluster bool, res *verify.Result) error {
	if asJSON {
		return writeJSON(w, res)
	}
	what := "objects and checksums"
	switch {
	case againstCluster:
		what = "the target cluster against the backup"
	case deep:
		what = "objects, checksums and records (deep)"
	}
	if againstCluster {
		fmt.Fprintf(w, "backup %s: checked %s: %s compared\n", backupID, what, plural64(res.Records, "record", "records"))
	} else {
		fmt.Fprintf(w, "backup %s: checked %s in %s: %s, %s read", backupID, what, location,
			plural(res.Segments, "segment", "segments"), formatBytes(res.Bytes))
		if res.Records > 0 {
			fmt.Fprintf(w, ", %s decoded", plural64(res.Records, "record", "records"))
		}
		fmt.Fprintln(w)
	}
	printStoreStates(w, res.States)
	if res.OK() {
		fmt.Fprintln(w, "OK")
	} else {
		fmt.Fprintf(w, "%s:\n", plural(len(res.Problems), "problem", "problems"))
		for _, p := range res.Problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	for _, x := range res.Warnings {
		fmt.Fprintf(w, "warning: %s\n", x)
	}
	return nil
}

// printStoreStates prints, per state store, whether the target's changelog
// holds the state the backup recorded (verify.Stores): "state of store
// "counts" (topic app-counts-changelog, 2 partitions): equal".
func printStoreStates(w io.Writer, states []verify.StoreState) {
	for _, st := range verify.Stores(states) {
		line := fmt.Sprintf("state of store %q (topic %s, %s): %s", st.Store, st.Topic, plural(st.Partitions, "partition", "partitions"), st.Result)
		switch st.Result {
		case format.StateDigestDifferent:
			verb := "differ"
			if len(st.Different) == 1 {
				verb = "differs"
			}
			line += fmt.Sprintf(" (%s %s from the backup's state digest)", partitionsText(st.Different), verb)
		case format.StateDigestNotRecorded:
			line += " (the backup recorded no state digest: a backup written before digests existed; records are compared all the same)"
		}
		fmt.Fprintln(w, line)
	}
}
