package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kafkastreams-dr/kafkastreams-dr/backup"
	"github.com/kafkastreams-dr/kafkastreams-dr/restorer"
)

// The environment a Kubernetes Indexed Job gives each shard
// (configs/kubernetes/job-backup-sharded.yaml): the pod's completion index
// (set by Kubernetes, batch/v1 completionMode Indexed), the Job's
// completions and a run identifier shared by its pods (the manifest sets
// both, the latter from the pod label batch.kubernetes.io/controller-uid
// through the downward API).
const (
	envCompletionIndex = "JOB_COMPLETION_INDEX"
	envShards          = "KAFKASTREAMS_DR_SHARDS"
	envShardRun        = "KAFKASTREAMS_DR_SHARD_RUN"
)

// shardFlags are --shard, --shard-run and --shard-wait.
type shardFlags struct {
	spec, run string
	wait      time.Duration
}

func (f *shardFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.spec, "shard", "", "I/N: run shard I (0 <= I < N) of a run split across N processes (default from $"+envCompletionIndex+" and $"+envShards+" when $"+envShards+" is set)")
	cmd.Flags().StringVar(&f.run, "shard-run", "", "with --shard: the identifier every shard of one run shares, e.g. the Job's controller uid (default $"+envShardRun+")")
	durationFlag(cmd.Flags(), &f.wait, "shard-wait", backup.DefaultShardWait, "", "with --shard: how long shards 1..N-1 wait for shard 0 (a backup: to take the cut; a restore: to create the topics)")
}

// shard returns the shard these flags and the environment name (nil: not
// sharded), or a usage error naming the flag or variable and the fix.
func (f *shardFlags) shard(cmd *cobra.Command, getenv func(string) string) (*backup.Shard, error) {
	spec, from := f.spec, "--shard"
	if spec == "" {
		if n := getenv(envShards); n != "" {
			i := getenv(envCompletionIndex)
			if i == "" {
				return nil, &usageError{fmt.Errorf("$%s is %q but $%s is not set: set both (a Kubernetes Indexed Job sets %s), or give --shard I/N", envShards, n, envCompletionIndex, envCompletionIndex)}
			}
			spec, from = i+"/"+n, fmt.Sprintf("$%s/$%s", envCompletionIndex, envShards)
		}
	}
	if spec == "" {
		if cmd.Flags().Changed("shard-run") || cmd.Flags().Changed("shard-wait") {
			return nil, &usageError{errors.New("--shard-run and --shard-wait go with --shard I/N")}
		}
		return nil, nil
	}
	is, ns, ok := strings.Cut(spec, "/")
	i, ierr := strconv.Atoi(is)
	n, nerr := strconv.Atoi(ns)
	if !ok || ierr != nil || nerr != nil || !shardNumber(is) || !shardNumber(ns) {
		return nil, &usageError{fmt.Errorf("%s %q is not I/N (e.g. 0/3: shard 0 of 3)", from, spec)}
	}
	s := &backup.Shard{Index: i, Count: n, Run: f.run, Wait: f.wait}
	if s.Run == "" {
		s.Run = getenv(envShardRun)
	}
	if err := backup.ValidateShard(s); err != nil {
		if from == "--shard" { // the error names --shard I/N already
			return nil, &usageError{err}
		}
		return nil, &usageError{fmt.Errorf("%s %q: %w", from, spec, err)}
	}
	return s, nil
}

// shardNumber reports whether s is a number as I/N is written: digits,
// with a leading minus for the range check to name (strconv.Atoi also
// takes a plus sign).
func shardNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func lookupEnv(k string) string { return os.Getenv(k) }

// shardPendingJSON is backup --json of a shard that finished before the
// others: the backup is not complete yet.
type shardPendingJSON struct {
	BackupID      string   `json:"backup_id"`
	Repository    string   `json:"repository"`
	Complete      bool     `json:"complete"`
	Shard         int      `json:"shard"`
	Shards        int      `json:"shards"`
	Run           string   `json:"run"`
	ShardsPending []int    `json:"shards_pending"`
	Resumed       bool     `json:"resumed"`
	Records       int64    `json:"records"`
	Bytes         int64    `json:"bytes"`
	Warnings      []string `json:"warnings"`
}

// writeShardPending prints a shard's result when other shards of its run
// have not finished: what it copied and who completes the backup.
func writeShardPending(w io.Writer, asJSON bool, location string, s *backup.Shard, res *backup.Result) error {
	if asJSON {
		return writeJSON(w, shardPendingJSON{BackupID: res.BackupID, Repository: location, Shard: s.Index, Shards: s.Count, Run: s.Run,
			ShardsPending: res.ShardsPending, Resumed: res.Resumed, Records: res.Records, Bytes: res.Bytes, Warnings: nonNil(res.Warnings)})
	}
	fmt.Fprintf(w, "Shard %d/%d of backup %s (run %s) done: %d records, %d bytes copied\n", s.Index, s.Count, res.BackupID, s.Run, res.Records, res.Bytes)
	fmt.Fprintf(w, "  not complete yet: %s not finished; the last shard to finish completes the backup\n", shardsPending(res.ShardsPending))
	fmt.Fprintf(w, "  repository: %s\n", location)
	for _, warn := range res.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
	return nil
}

// restoreShardPendingJSON is restore --json of a shard that finished
// producing before the others: the restore is not complete yet.
type restoreShardPendingJSON struct {
	RestoreID     string `json:"restore_id"`
	BackupID      string `json:"backup_id"`
	Repository    string `json:"repository"`
	Complete      bool   `json:"complete"`
	Shard         int    `json:"shard"`
	Shards        int    `json:"shards"`
	Run           string `json:"run"`
	ShardsPending []int  `json:"shards_pending"`
	Partitions    int    `json:"partitions"`
	Records       int64  `json:"records"`
}

// writeRestoreShardPending prints a restore shard's result when other
// shards of its run have not finished: no offset is committed yet.
func writeRestoreShardPending(w io.Writer, asJSON bool, location string, s *restorer.Shard, rep *restorer.Report) error {
	if asJSON {
		return writeJSON(w, restoreShardPendingJSON{RestoreID: rep.RestoreID, BackupID: rep.BackupID, Repository: location, Shard: s.Index, Shards: s.Count, Run: s.Run,
			ShardsPending: rep.ShardsPending, Partitions: len(rep.Partitions), Records: rep.Records})
	}
	fmt.Fprintf(w, "Shard %d/%d of restore %s (backup %s, run %s) done: %d records into %d partitions\n", s.Index, s.Count, rep.RestoreID, rep.BackupID, s.Run, rep.Records, len(rep.Partitions))
	fmt.Fprintf(w, "  not complete yet: %s not finished; the last shard to finish commits the group's offsets\n", shardsPending(rep.ShardsPending))
	fmt.Fprintf(w, "  repository: %s\n", location)
	return nil
}

// shardsPending names the shards a run still waits for, with its verb:
// "shard 1 has", "shards 1, 2 have".
func shardsPending(pending []int) string {
	pend := make([]string, len(pending))
	for i, p := range pending {
		pend[i] = strconv.Itoa(p)
	}
	if len(pend) == 1 {
		return "shard " + pend[0] + " has"
	}
	return "shards " + strings.Join(pend, ", ") + " have"
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
