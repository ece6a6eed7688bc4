// Package statedir reads and removes the local state of a Kafka Streams
// application: <state.dir>/<application.id>/<task>/ directories whose
// .checkpoint files say up to which changelog offset each store was
// restored (org.apache.kafka.streams.state.internals.OffsetCheckpoint).
// After a restore renumbers the changelogs those offsets are meaningless
// (docs/DOMAIN.md#state-wipe, field case 19): Check says which task
// directories must be wiped, dating each RocksDB store by what its own
// files record (SST table properties, rotated LOG names) rather than by
// modification times, which a copy or touch changes; PlanWipe and Wipe
// remove one application's state like KafkaStreams#cleanUp(), and only
// that.
package statedir

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// CheckpointFile is the name Kafka Streams gives checkpoint files.
const CheckpointFile = ".checkpoint"

// OffsetUnknown is the offset Kafka Streams writes for a store whose
// position is unknown (OffsetCheckpoint.OFFSET_UNKNOWN).
const OffsetUnknown = -4

// Entry is one line of a checkpoint: a changelog partition and the offset
// up to which the store holds it.
type Entry struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// Checkpoint is one task's (or the global stores') .checkpoint file, and
// what the task directory's files say of the state's age. A task directory
// without one (Kafka Streams 4.x keeps RocksDB stores' changelog offsets
// inside the store, KIP-1035, and writes .checkpoint files only for older
// formats) has File false and no entries.
type Checkpoint struct {
	Task    string    `json:"task"` // task id directory name, e.g. "0_1", "global", "__orders__/0_1"
	Path    string    `json:"path"`
	File    bool      `json:"file"` // a .checkpoint file exists
	ModTime time.Time `json:"mod_time"`
	Entries []Entry   `json:"entries"`
	Err     string    `json:"error,omitempty"` // the file exists but does not parse
	// Stores are the task's RocksDB stores (directories holding SST files
	// or RocksDB's info LOG), each dated by its own content.
	Stores []StoreAge `json:"stores,omitempty"`
	// Oldest is the oldest modification time of a file in the task
	// directory (zero when it has none) and OldestPath that file: a copy
	// or touch makes it newer, never older.
	Oldest     time.Time `json:"oldest_file_time"`
	OldestPath string    `json:"oldest_file,omitempty"`
	// Links are the symbolic links below the task directory, relative to
	// it ("store.bin", "rocksdb"): the check does not follow them, so
	// what they point to is not judged, and state wipe refuses them.
	Links []string `json:"links,omitempty"`
}

// StoreAge is what one RocksDB store's files record, in their content,
// about when its data first existed: the earliest SST table property
// rocksdb.creation.time (the oldest data's time, kept through compactions)
// or rocksdb.file.creation.time, and the earliest rotated info log name
// LOG.old.<microseconds> (the store was opened again then). A copy (cp,
// rsync, os.CopyFS) or a touch keeps both. Born is zero when the store has
// neither (not flushed yet, never reopened).
type StoreAge struct {
	Dir  string    `json:"dir"` // relative to the task directory, e.g. "rocksdb/counts-store"
	Born time.Time `json:"born"`
	From string    `json:"from,omitempty"` // the file that dates it, relative to the task directory
}

// ReadCheckpoint parses a checkpoint file: a version line (0), a count
// line, then count lines "topic partition offset".
func ReadCheckpoint(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return strings.TrimSpace(sc.Text()), true
	}
	v, ok := next()
	if !ok || v != "0" {
		return nil, fmt.Errorf("%s: version line %q: want 0 (the OffsetCheckpoint format)", path, v)
	}
	c, ok := next()
	n, err := strconv.Atoi(c)
	if !ok || err != nil || n < 0 {
		return nil, fmt.Errorf("%s line %d: count %q is not a number", path, line, c)
	}
	entries := make([]Entry, 0, n)
	for range n {
		l, ok := next()
		if !ok {
			return nil, fmt.Errorf("%s: %d entries announced, %d found", path, n, len(entries))
		}
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s line %d: %q is not \"topic partition offset\"", path, line, l)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s line %d: %q is not \"topic partition offset\"", path, line, l)
		}
		entries = append(entries, Entry{Topic: f[0], Partition: int32(p), Offset: o})
	}
	return entries, sc.Err()
}

// AppDir returns <stateDir>/<applicationID>.
func AppDir(stateDir, applicationID string) string { return filepath.Join(stateDir, applicationID) }

// ErrNoState is wrapped when the state.dir holds no local state of the
// application: no <application.id> directory, or one without any task
// directory (an instance that never ran, ran no task, or was wiped). It is
// never an all-clear: the state.dir or the application.id may be wrong.
var ErrNoState = errors.New("no local state")

// Scan reads every checkpoint of the application's tasks and global
// stores. It fails, wrapping ErrNoState, when the state.dir holds no task
// directory of the application, and with an error naming --state-dir
// (wrapping fs.ErrNotExist) when the state.dir does not exist.
func Scan(stateDir, applicationID string) ([]Checkpoint, error) {
	dir := AppDir(stateDir, applicationID)
	if err := checkStateDir(stateDir, applicationID); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	// Kafka Streams finds task directories with File.isDirectory(), which
	// follows symbolic links: so does the check (it only reads).
	isDir := func(p string) bool { fi, err := os.Stat(p); return err == nil && fi.IsDir() }
	var tasks []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case (plainTaskDir.MatchString(name) || name == GlobalDir) && isDir(filepath.Join(dir, name)):
			tasks = append(tasks, name)
		case namedTopologyDir.MatchString(name) && isDir(filepath.Join(dir, name)):
			ts, err := os.ReadDir(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			for _, t := range ts {
				if plainTaskDir.MatchString(t.Name()) && isDir(filepath.Join(dir, name, t.Name())) {
					tasks = append(tasks, name+"/"+t.Name())
				}
			}
		}
	}
	var cps []Checkpoint
	for _, task := range tasks {
		c, err := scanTask(filepath.Join(dir, filepath.FromSlash(task)))
		if err != nil {
			return nil, err
		}
		c.Task = task
		cps = append(cps, c)
	}
	if len(cps) == 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		what := "is empty"
		if len(names) > 0 {
			what = "holds " + strings.Join(names, ", ")
		}
		return nil, fmt.Errorf("%w of application.id %q under %s: %s has no task directories (it %s)", ErrNoState, applicationID, stateDir, dir, what)
	}
	sort.Slice(cps, func(i, j int) bool { return cps[i].Task < cps[j].Task })
	return cps, nil
}

// scanTask reads a task directory: its .checkpoint file, and the age of
// its files and RocksDB stores. It follows a link that is the task
// directory, as Kafka Streams does, and no link below it.
func scanTask(dir string) (Checkpoint, error) {
	c := Checkpoint{Path: filepath.Join(dir, CheckpointFile)}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // a linked task directory: walk what it links to
	}
	fi, err := os.Lstat(c.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return c, err
	default:
		c.File = true
		if ents, err := ReadCheckpoint(c.Path); err != nil {
			c.Err = err.Error()
		} else {
			c.Entries = ents
		}
	}
	stores := map[string]*StoreAge{}
	date := func(rel string, born time.Time, from string) {
		s := stores[rel]
		if s == nil {
			s = &StoreAge{Dir: rel}
			stores[rel] = s
		}
		if !born.IsZero() && (s.Born.IsZero() || born.Before(s.Born)) {
			s.Born, s.From = born, from
		}
	}
	var newest time.Time
	// The callback skips what it cannot read and never returns an error,
	// so WalkDir returns none.
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink != 0 {
			rel, _ := filepath.Rel(dir, p)
			c.Links = append(c.Links, filepath.ToSlash(rel))
			return nil
		}
		if err != nil || !d.Type().IsRegular() || d.Name() == LockFile {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if m := info.ModTime(); c.Oldest.IsZero() || m.Before(c.Oldest) {
			c.Oldest, c.OldestPath = m, rel
		}
		if m := info.ModTime(); m.After(newest) {
			newest = m
		}
		storeDir := filepath.ToSlash(filepath.Dir(rel))
		switch name := d.Name(); {
		case sstFile.MatchString(name):
			born, _ := sstCreated(p) // an unreadable SST dates nothing
			date(storeDir, born, filepath.ToSlash(rel))
		case name == "LOG" || name == "CURRENT":
			date(storeDir, time.Time{}, "")
		default:
			if born, ok := rotatedLogTime(name); ok {
				date(storeDir, born, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	if c.File && fi != nil {
		c.ModTime = fi.ModTime()
	} else {
		c.ModTime = newest
	}
	for _, s := range stores {
		c.Stores = append(c.Stores, *s)
	}
	sort.Slice(c.Stores, func(i, j int) bool { return c.Stores[i].Dir < c.Stores[j].Dir })
	return c, nil
}

// validApplicationID refuses an application.id that is not one path
// element: <state.dir>/<application.id> must stay inside the state.dir.
func validApplicationID(applicationID string) error {
	if applicationID == "" || strings.ContainsAny(applicationID, "/\\\x00") || applicationID == "." || applicationID == ".." {
		return fmt.Errorf("invalid application.id %q: it must be one path element (Kafka Streams names <state.dir>/<application.id> after it)", applicationID)
	}
	return nil
}

// checkStateDir refuses a state directory that is itself one
// application's directory, and an application.id with no directory there
// (naming the applications that do have one).
func checkStateDir(stateDir, applicationID string) error {
	if err := validApplicationID(applicationID); err != nil {
		return err
	}
	fi, err := os.Stat(stateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--state-dir %s does not exist (%w): pass the instance's state.dir (StreamsConfig state.dir), which holds <application.id>/", stateDir, err)
	}
	if err != nil {
		return fmt.Errorf("--state-dir %s: %w", stateDir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("--state-dir %s is not a directory", stateDir)
	}
	if looksLikeAppDir(stateDir) {
		return fmt.Errorf("--state-dir %s holds task directories itself: it is one application's directory (%s); pass its parent, the application's state.dir", stateDir, filepath.Base(stateDir))
	}
	dir := AppDir(stateDir, applicationID)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		var apps []string
		if es, err := os.ReadDir(stateDir); err == nil {
			for _, e := range es {
				if e.IsDir() && looksLikeAppDir(filepath.Join(stateDir, e.Name())) {
					apps = append(apps, e.Name())
				}
			}
		}
		if len(apps) > 0 {
			return fmt.Errorf("%w of application.id %q under %s (it has state of: %s)", ErrNoState, applicationID, stateDir, strings.Join(apps, ", "))
		}
		return fmt.Errorf("%w of application.id %q under %s", ErrNoState, applicationID, stateDir)
	}
	return nil
}

// looksLikeAppDir reports whether dir holds Kafka Streams task directories
// or its process metadata file.
func looksLikeAppDir(dir string) bool {
	es, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range es {
		if (e.IsDir() && (plainTaskDir.MatchString(e.Name()) || e.Name() == GlobalDir || namedTopologyDir.MatchString(e.Name()))) || e.Name() == ProcessMetadataFile {
			return true
		}
	}
	return false
}

// ErrInUse is wrapped when a running Kafka Streams instance holds a lock
// in the application's state directory.
var ErrInUse = errors.New("state directory in use")
