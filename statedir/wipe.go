package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
)

// The names Kafka Streams gives what it keeps in <state.dir>/<application.id>
// (org.apache.kafka.streams.processor.internals.StateDirectory).
const (
	LockFile            = ".lock"                          // StateDirectory.LOCK_FILE_NAME
	ProcessMetadataFile = "kafka-streams-process-metadata" // StateDirectory.PROCESS_FILE_NAME: {"processId": UUID}
	GlobalDir           = "global"                         // StateDirectory.globalStateDir()
)

var (
	// plainTaskDir is StateDirectory.TASK_DIR_PATH_NAME: <subtopology>_<partition>.
	plainTaskDir = regexp.MustCompile(`^[0-9]+_[0-9]+$`)
	// namedTopologyDir is StateDirectory.NAMED_TOPOLOGY_DIR_PATH_NAME:
	// __<topology name>__, which holds that topology's task directories.
	namedTopologyDir = regexp.MustCompile(`^__.+__$`)
)

// ErrRefused is wrapped by every refusal of PlanWipe: nothing was removed.
var ErrRefused = errors.New("wipe refused")

// WipePlan is what a wipe of one application's local state removes, as
// checked by PlanWipe: Dir itself and every entry below it, each known by
// its device and inode. Execute removes exactly these and nothing else.
type WipePlan struct {
	Dir   string   // <state.dir>/<application.id>, absolute
	Tasks []string // task directories, relative to Dir: "0_1", "global", "__orders__/0_1"
	Files int      // regular files
	Dirs  int      // directories below Dir
	Bytes int64    // total size of the files

	stateDir string    // absolute
	appID    string    // the last element of Dir
	self     fileID    // Dir's identity
	entries  []planned // pre-order: every directory before its entries
}

// planned is one checked entry, relative to the application directory.
type planned struct {
	rel string // slash-separated
	dir bool
	id  fileID
}

type fileID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}

// systemDirs are directories no state.dir/application.id pair may name:
// the Filesystem Hierarchy Standard's top-level directories and the
// shared ones below /usr and /var.
var systemDirs = map[string]bool{
	"/usr/bin": true, "/usr/sbin": true, "/usr/lib": true, "/usr/lib64": true, "/usr/libexec": true,
	"/usr/local": true, "/usr/share": true, "/usr/include": true, "/usr/src": true,
	"/var/lib": true, "/var/log": true, "/var/tmp": true, "/var/cache": true, "/var/run": true,
	"/var/spool": true, "/var/mail": true, "/var/opt": true, "/var/local": true, "/var/backups": true,
}

// protectedPath says why dir (absolute, cleaned) must never be wiped, or ""
// when it may: a filesystem root, a directory directly below the root (a
// state.dir of "/"), a system directory, home (the user's $HOME, "" when
// unknown) or one of its ancestors. It reads nothing: it judges the path.
func protectedPath(dir, home string) string {
	dir = filepath.Clean(dir)
	if home != "" {
		home = filepath.Clean(home)
	}
	switch {
	case filepath.Dir(dir) == dir:
		return "the filesystem root"
	case home != "" && dir == home:
		return "the home directory ($HOME)"
	case home != "" && strings.HasPrefix(home, dir+string(filepath.Separator)):
		return "an ancestor of the home directory ($HOME is " + home + ")"
	case filepath.Dir(filepath.Dir(dir)) == filepath.Dir(dir) || systemDirs[dir]:
		return "a system directory"
	}
	return ""
}

// PlanWipe checks that <stateDir>/<applicationID> holds nothing but
// Kafka Streams state of that application and returns what a wipe would
// remove. The application directory may hold only what StateDirectory
// writes there: task directories (<subtopology>_<partition>, named
// topologies' __<name>__/<subtopology>_<partition>, global), .lock and
// kafka-streams-process-metadata; below the task directories, only
// regular files and directories (stores, RocksDB files, .checkpoint) on
// the same filesystem. It refuses, wrapping ErrRefused and reading no
// further than needed, removing nothing:
//   - an invalid application.id (empty, ".", "..", a path separator);
//   - a --state-dir that does not exist, is not a directory, or is one
//     application's directory itself;
//   - an application directory that is a filesystem root, a system
//     directory, $HOME or one of its ancestors, given or after resolving
//     the state.dir's symbolic links;
//   - an application directory that is a symbolic link, or that holds a
//     symbolic link, a device, socket or pipe, another filesystem's mount
//     point, or any entry StateDirectory does not write (each is named);
//   - a .lock a running Kafka Streams instance holds (also ErrInUse).
//
// An application.id with no directory there wraps ErrNoState (and
// ErrRefused), naming the applications that do have one.
func PlanWipe(stateDir, applicationID string) (*WipePlan, error) {
	if err := validApplicationID(applicationID); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	// The path first, before reading anything there.
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("%w: --state-dir %s: %w", ErrRefused, stateDir, err)
	}
	dir := filepath.Join(abs, applicationID)
	paths := []string{dir}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		paths = append(paths, filepath.Join(resolved, applicationID))
	}
	home, _ := os.UserHomeDir()
	if home != "" {
		if h, err := filepath.EvalSymlinks(home); err == nil {
			home = h
		}
	}
	for _, p := range paths {
		if why := protectedPath(p, home); why != "" {
			return nil, fmt.Errorf("%w: --state-dir %s --application-id %s is %s, %s: Kafka Streams state never lives there; pass the instance's state.dir (its StreamsConfig state.dir)",
				ErrRefused, stateDir, applicationID, p, why)
		}
	}
	if err := checkStateDir(stateDir, applicationID); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		to, _ := os.Readlink(dir)
		return nil, fmt.Errorf("%w: %s is a symbolic link (to %s): a wipe never follows links; pass the state.dir that holds the application's directory itself", ErrRefused, dir, to)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrRefused, dir)
	}
	self, ok := idOf(fi)
	if !ok {
		return nil, fmt.Errorf("%w: %s: no device and inode on this platform", ErrRefused, dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	defer root.Close()
	if fi, err := root.Lstat("."); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	} else if id, _ := idOf(fi); id != self {
		return nil, fmt.Errorf("%w: %s changed while it was being checked: run the wipe again", ErrRefused, dir)
	}
	p := &WipePlan{Dir: dir, stateDir: abs, appID: applicationID, self: self}
	var unknown, bad []string
	top, err := readDir(root, ".")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	for _, e := range top {
		name := e.Name()
		switch {
		case e.Type().IsRegular() && (name == LockFile || name == ProcessMetadataFile):
			if err := p.add(root, name, self.dev, &bad); err != nil {
				return nil, err
			}
		case e.IsDir() && (plainTaskDir.MatchString(name) || name == GlobalDir):
			p.Tasks = append(p.Tasks, name)
			if err := p.walk(root, name, self.dev, &bad); err != nil {
				return nil, err
			}
		case e.IsDir() && namedTopologyDir.MatchString(name):
			if err := p.add(root, name, self.dev, &bad); err != nil {
				return nil, err
			}
			tasks, err := readDir(root, name)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrRefused, err)
			}
			for _, t := range tasks {
				rel := name + "/" + t.Name()
				if !t.IsDir() || !plainTaskDir.MatchString(t.Name()) {
					unknown = append(unknown, describe(rel, t))
					continue
				}
				p.Tasks = append(p.Tasks, rel)
				if err := p.walk(root, rel, self.dev, &bad); err != nil {
					return nil, err
				}
			}
		default:
			unknown = append(unknown, describe(name, e))
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%w: %s holds what Kafka Streams never writes there, and a wipe never follows or removes:\n  %s\ncheck that it is the state of application.id %q; if it is, remove those entries yourself first",
			ErrRefused, dir, strings.Join(bad, "\n  "), applicationID)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%w: %s holds %d %s that %s not Kafka Streams state of application.id %q:\n  %s\na wipe removes only task directories (<subtopology>_<partition>, __<topology>__/<subtopology>_<partition>, global), %s and %s: check --state-dir and --application-id, or move those entries out of %s first",
			ErrRefused, dir, len(unknown), plural(len(unknown), "entry", "entries"), plural(len(unknown), "is", "are"), applicationID,
			strings.Join(unknown, "\n  "), LockFile, ProcessMetadataFile, dir)
	}
	if held, err := p.inUse(root); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	} else if held != "" {
		return nil, fmt.Errorf("%w: %w: %s is locked by a running Kafka Streams instance: stop every instance of %q on this host first", ErrRefused, ErrInUse, held, applicationID)
	}
	return p, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// describe names an unknown entry and its kind.
func describe(rel string, e fs.DirEntry) string {
	switch t := e.Type(); {
	case t.IsDir():
		return rel + "/ (directory)"
	case t.IsRegular():
		return rel + " (file)"
	case t&fs.ModeSymlink != 0:
		return rel + " (symbolic link)"
	default:
		return rel + " (" + kind(t) + ")"
	}
}

// kind names a special file's type.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file (" + m.Type().String() + ")"
}

func readDir(root *os.Root, rel string) ([]fs.DirEntry, error) {
	f, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	es, err := f.ReadDir(-1)
	sort.Slice(es, func(i, j int) bool { return es[i].Name() < es[j].Name() })
	return es, err
}

// add records one entry after checking it with Lstat: a regular file or a
// directory on device dev. Anything else is added to bad.
func (p *WipePlan) add(root *os.Root, rel string, dev uint64, bad *[]string) error {
	fi, err := root.Lstat(rel)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	full := filepath.Join(p.Dir, filepath.FromSlash(rel))
	id, _ := idOf(fi)
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		to, _ := root.Readlink(rel)
		*bad = append(*bad, fmt.Sprintf("%s: a symbolic link (to %s)", full, to))
		return nil
	case !m.IsRegular() && !m.IsDir():
		*bad = append(*bad, fmt.Sprintf("%s: a %s, not a file or directory", full, kind(m)))
		return nil
	case id.dev != dev:
		*bad = append(*bad, fmt.Sprintf("%s: on another filesystem (a mount point)", full))
		return nil
	case m.IsDir():
		p.Dirs++
	default:
		p.Files++
		p.Bytes += fi.Size()
	}
	p.entries = append(p.entries, planned{rel: rel, dir: fi.IsDir(), id: id})
	return nil
}

// walk records rel and, if it is a directory, everything below it.
func (p *WipePlan) walk(root *os.Root, rel string, dev uint64, bad *[]string) error {
	n := len(*bad)
	if err := p.add(root, rel, dev, bad); err != nil || len(*bad) > n || !p.entries[len(p.entries)-1].dir {
		return err
	}
	es, err := readDir(root, rel)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	for _, e := range es {
		if err := p.walk(root, path.Join(rel, e.Name()), dev, bad); err != nil {
			return err
		}
	}
	return nil
}

// inUse reports the first planned .lock file that another process holds
// (Kafka Streams locks them with FileChannel.tryLock, i.e. POSIX record
// locks on Linux): the application directory's, or a task directory's
// (Kafka Streams before 2.8).
func (p *WipePlan) inUse(root *os.Root) (string, error) {
	for _, e := range p.entries {
		if e.dir || path.Base(e.rel) != LockFile || strings.Count(e.rel, "/") > 1 {
			continue
		}
		f, err := root.OpenFile(e.rel, os.O_RDWR|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		lk := syscall.Flock_t{Type: syscall.F_WRLCK}
		err = syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk)
		f.Close()
		if err == nil && lk.Type != syscall.F_UNLCK {
			return fmt.Sprintf("%s (held by process %d)", filepath.Join(p.Dir, filepath.FromSlash(e.rel)), lk.Pid), nil
		}
	}
	return "", nil
}

// Entries lists what the wipe removes, relative to Dir, in the order of a
// walk (a directory before its entries; directories end with "/").
func (p *WipePlan) Entries() []string {
	out := make([]string, len(p.entries))
	for i, e := range p.entries {
		out[i] = e.rel
		if e.dir {
			out[i] += "/"
		}
	}
	return out
}

// Execute removes what PlanWipe checked, deepest first, then Dir itself,
// and nothing else: every name is looked up again, without following
// links, inside Dir (an os.Root: nothing outside it can be reached, even
// if a directory is swapped for a link meanwhile), and removed only if it
// is still the file or directory that was checked (same device and
// inode); directories are removed only when empty. When the tree changed
// since the check (an entry replaced, or a new one in a directory) it
// stops there and returns an error naming it, with the number of entries
// already removed; what is left is still the application's state (run
// the wipe again once nothing writes there).
func (p *WipePlan) Execute() (removed int, err error) {
	parent, err := os.OpenRoot(p.stateDir)
	if err != nil {
		return 0, err
	}
	defer parent.Close()
	if err := same(parent, p.appID, planned{rel: p.appID, dir: true, id: p.self}); err != nil {
		return 0, fmt.Errorf("%s: %w", p.Dir, err)
	}
	root, err := parent.OpenRoot(p.appID)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	if err := same(root, ".", planned{rel: ".", dir: true, id: p.self}); err != nil {
		return 0, fmt.Errorf("%s: %w", p.Dir, err)
	}
	total := len(p.entries) + 1
	for i := len(p.entries) - 1; i >= 0; i-- {
		e := p.entries[i]
		full := filepath.Join(p.Dir, filepath.FromSlash(e.rel))
		if err := same(root, e.rel, e); err != nil {
			return removed, fmt.Errorf("%s: %w: stopped after removing %d of %d entries", full, err, removed, total)
		}
		if err := root.Remove(e.rel); err != nil {
			if e.dir && errors.Is(err, syscall.ENOTEMPTY) {
				err = errors.New("entries appeared in it after the check")
			}
			return removed, fmt.Errorf("remove %s: %w: stopped after removing %d of %d entries", full, err, removed, total)
		}
		removed++
	}
	root.Close()
	if err := same(parent, p.appID, planned{rel: p.appID, dir: true, id: p.self}); err != nil {
		return removed, fmt.Errorf("%s: %w", p.Dir, err)
	}
	if err := parent.Remove(p.appID); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) {
			err = errors.New("entries appeared in it after the check")
		}
		return removed, fmt.Errorf("remove %s: %w: stopped after removing %d of %d entries", p.Dir, err, removed, total)
	}
	return removed + 1, nil
}

// same checks that rel (looked up without following a final link) is
// still the entry that was checked.
func same(root *os.Root, rel string, want planned) error {
	fi, err := root.Lstat(rel)
	if err != nil {
		return fmt.Errorf("changed after the check: %w", err)
	}
	id, _ := idOf(fi)
	if fi.Mode()&fs.ModeSymlink != 0 || fi.IsDir() != want.dir || id != want.id {
		return errors.New("replaced after the check (another file, directory or link)")
	}
	return nil
}

// Wipe removes the application's state directory <stateDir>/<appID>, like
// KafkaStreams#cleanUp(), after PlanWipe's checks (see there for its
// refusals, which wrap ErrRefused; nothing is removed then), with
// WipePlan.Execute. It returns the number of task directories removed.
func Wipe(stateDir, applicationID string) (int, error) {
	p, err := PlanWipe(stateDir, applicationID)
	if err != nil {
		return 0, err
	}
	if _, err := p.Execute(); err != nil {
		return 0, err
	}
	return len(p.Tasks), nil
}
