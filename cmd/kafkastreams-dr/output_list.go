// Rendering of list: the table of backups, newest first, with a summary line
// naming the latest (or --json). Functions here take a writer and plain
// values; none does Kafka or storage I/O.

package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kafkastreams-dr/kafkastreams-dr/catalog"
	"github.com/kafkastreams-dr/kafkastreams-dr/format"
	"github.com/kafkastreams-dr/kafkastreams-dr/repository"
)

// listedBackup is one backup in the --json output of list.
type listedBackup struct {
	catalog.Summary
	// ApplicationID shadows the Summary's (omitted when ""): every
	// readable backup has it, "" for one taken without an application_id;
	// an unreadable one has none.
	ApplicationID *string `json:"application_id,omitempty"`
	CutAgeSeconds int64   `json:"cut_age_seconds,omitempty"`
}

// listJSON is the --json output of list.
type listJSON struct {
	Repository string `json:"repository"`
	// ApplicationIDs are the distinct application.ids of the readable
	// backups, sorted ("" for none): more than one is a mixed repository.
	ApplicationIDs []string       `json:"application_ids,omitempty"`
	Backups        []listedBackup `json:"backups"`
	// ReportKeyIDs are the key ids the restore and drill reports are
	// encrypted with (repository.ReportKeyIDs); omitted when none is.
	ReportKeyIDs []reportKey `json:"report_key_ids,omitempty"`
}

// reportKey is a key id the restore and drill reports need, and whether
// storage.encryption holds it.
type reportKey struct {
	repository.ReportKey
	Configured bool `json:"configured"`
}

// reportKeys marks each of keys configured when its id is in configured.
func reportKeys(keys []repository.ReportKey, configured []string) []reportKey {
	out := make([]reportKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, reportKey{ReportKey: k, Configured: slices.Contains(configured, k.KeyID)})
	}
	return out
}

// printReportKeys prints a line per key id the restore and drill reports
// need, "(not configured)" after one storage.encryption does not hold.
func printReportKeys(w io.Writer, keys []reportKey) {
	for _, k := range keys {
		var counts []string
		if k.Restores > 0 {
			counts = append(counts, plural(k.Restores, "restore report", "restore reports"))
		}
		if k.Drills > 0 {
			counts = append(counts, plural(k.Drills, "drill report", "drill reports"))
		}
		line := "restore and drill reports need key id " + k.KeyID
		if !k.Configured {
			line += " (not configured)"
		}
		line += ": " + strings.Join(counts, ", ")
		if !k.Configured {
			line += "; estimate and drill history skip them: add the key to storage.encryption.previous_keys to read them"
		}
		fmt.Fprintln(w, line)
	}
}

// listApplications returns the distinct application.ids of the readable
// backups of list, sorted ("" for backups taken without one).
func listApplications(list []catalog.Summary) []string {
	var apps []string
	for _, b := range list {
		if b.State != catalog.StateUnreadable && !slices.Contains(apps, b.ApplicationID) {
			apps = append(apps, b.ApplicationID)
		}
	}
	slices.Sort(apps)
	return apps
}

// applicationName renders an application.id in list's table: "(none)" for
// a backup taken without one.
func applicationName(id string) string {
	if id == "" {
		return "(none)"
	}
	return id
}

// printBackupList prints the table of backups and a summary line. A line
// naming the application.id of the backups follows when they share one;
// when they do not (a mixed repository), the table has an APPLICATION
// column and a warning follows the summary.
func printBackupList(w io.Writer, location string, list []catalog.Summary, now time.Time) {
	if len(list) == 0 {
		fmt.Fprintf(w, "no backups in %s\n", location)
		return
	}
	apps := listApplications(list)
	mixed := len(apps) > 1
	tw := newTable(w)
	// app is the APPLICATION cell with its tab, in a mixed repository only.
	app := func(b catalog.Summary) string {
		switch {
		case !mixed:
			return ""
		case b.State == catalog.StateUnreadable:
			return "-\t"
		}
		return applicationName(b.ApplicationID) + "\t"
	}
	// keys is the KEY IDS cell with its tab, when a backup is encrypted
	// (docs/OPERATIONS.md, "Encryption": a key is dropped once no kept
	// backup lists it); "plaintext" for one that is not.
	encrypted := slices.ContainsFunc(list, func(b catalog.Summary) bool { return len(b.KeyIDs) > 0 })
	keys := func(b catalog.Summary) string {
		switch {
		case !encrypted:
			return ""
		case b.State == catalog.StateUnreadable:
			return "\t-"
		case len(b.KeyIDs) == 0:
			return "\tplaintext"
		}
		return "\t" + strings.Join(b.KeyIDs, ",")
	}
	header := "BACKUP ID\tSTATE\tCUT (UTC)\tAGE\tPARENT\tTOPICS\tPARTITIONS\tRECORDS\tSTORED\tRATIO"
	if mixed {
		header = "BACKUP ID\tSTATE\tAPPLICATION\tCUT (UTC)\tAGE\tPARENT\tTOPICS\tPARTITIONS\tRECORDS\tSTORED\tRATIO"
	}
	if encrypted {
		header += "\tKEY IDS"
	}
	fmt.Fprintln(tw, header)
	counts := map[catalog.State]int{}
	// latest is what --backup-id latest means (repository.Latest): the
	// newest backup with a manifest.json, readable or not.
	var latest string
	var latestUnreadable bool
	var unreadable []catalog.Summary
	partial := 0
	for _, b := range list {
		counts[b.State]++
		if latest == "" && (b.State == catalog.StateComplete || b.State == catalog.StateUnreadable && b.ManifestKey == format.ManifestKey(b.BackupID)) {
			latest, latestUnreadable = b.BackupID, b.State == catalog.StateUnreadable
		}
		if b.State == catalog.StateUnreadable {
			unreadable = append(unreadable, b)
			fmt.Fprintf(tw, "%s\t%s\t%s-\t-\t-\t-\t-\t-\t-\t-%s\n", b.BackupID, b.State, app(b), keys(b))
			continue
		}
		state := string(b.State)
		if b.State == catalog.StateComplete && b.Partial {
			state = "partial"
			partial++
		}
		if b.Shards > 0 {
			state += fmt.Sprintf(" (%d/%d shards done)", b.ShardsDone, b.Shards)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s%s\n", b.BackupID, state, app(b),
			b.CutAt.UTC().Format("2006-01-02 15:04:05"), formatAge(now.Sub(b.CutAt)), dash(b.ParentBackupID),
			b.Topics, b.Partitions, b.Records, formatBytes(b.StoredBytes), formatRatio(b.CompressionRatio), keys(b))
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%s in %s: %d complete", plural(len(list), "backup", "backups"), location, counts[catalog.StateComplete])
	if partial > 0 {
		fmt.Fprintf(w, " (%d partial)", partial)
	}
	if n := counts[catalog.StateRunning]; n > 0 {
		fmt.Fprintf(w, ", %d running or interrupted", n)
	}
	if n := counts[catalog.StateAbandoned]; n > 0 {
		fmt.Fprintf(w, ", %d abandoned", n)
	}
	if n := counts[catalog.StateUnreadable]; n > 0 {
		fmt.Fprintf(w, ", %d unreadable", n)
	}
	switch {
	case latestUnreadable:
		fmt.Fprintf(w, "; latest: %s (unreadable: --backup-id latest fails; name an older backup to restore it)", latest)
	case latest != "":
		fmt.Fprintf(w, "; latest complete: %s", latest)
	}
	fmt.Fprintln(w)
	for _, b := range unreadable {
		fmt.Fprintf(w, "  %s: %s\n", b.BackupID, b.Error)
	}
	if len(apps) == 1 {
		fmt.Fprintf(w, "application.id: %s\n", applicationName(apps[0]))
	}
	if mixed {
		quoted := make([]string, len(apps))
		for i, a := range apps {
			quoted[i] = strconv.Quote(a)
			if a == "" {
				quoted[i] += " (none)"
			}
		}
		fmt.Fprintf(w, "warning: the repository holds backups of %d application.ids (%s): one repository prefix holds the backups of one application; "+
			"backup refuses to continue another application's chain and restore refuses another application's backup: give each application a storage.prefix of its own\n",
			len(apps), strings.Join(quoted, ", "))
	}
}

func formatRatio(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", r)
}

// formatAge is a duration for people: "42s", "17m", "5h12m", "3d4h".
func formatAge(d time.Duration) string {
	switch {
	case d < 0:
		return "in the future"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// writeBackupList prints the backups of the repository at location (newest
// first, as catalog.List returns them) as a table (printBackupList) or as
// JSON (listJSON), with the cut ages counted from now, and the key ids
// the restore and drill reports need (printReportKeys).
func writeBackupList(w io.Writer, asJSON bool, location string, list []catalog.Summary, reports []reportKey, now time.Time) error {
	if !asJSON {
		printBackupList(w, location, list, now)
		printReportKeys(w, reports)
		return nil
	}
	out := listJSON{Repository: location, ApplicationIDs: listApplications(list), Backups: []listedBackup{}, ReportKeyIDs: reports}
	for _, b := range list {
		lb := listedBackup{Summary: b}
		if b.State != catalog.StateUnreadable {
			lb.ApplicationID = &b.ApplicationID
		}
		if !b.CutAt.IsZero() {
			lb.CutAgeSeconds = int64(now.Sub(b.CutAt).Seconds())
		}
		out.Backups = append(out.Backups, lb)
	}
	return writeJSON(w, out)
}
