package configs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeMachine is a PATH of stub commands for .ci/system-packages: the real
// shell tools it uses, and fakes of everything it checks or runs. apt-get and
// sudo record their command lines in the file log.
type fakeMachine struct {
	bin string // the PATH
	log string // apt-get and sudo calls, one line each
}

// machine describes a fake machine: which commands exist, the Java major
// version, whether dpkg knows kcat and awscli, and the user id.
type machine struct {
	missing   []string // commands absent from PATH
	java      string   // java -version's version, e.g. "17.0.15"
	dpkgKnows []string // packages dpkg-query reports installed
	uid       string
}

func newFakeMachine(t *testing.T, m machine) fakeMachine {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	f := fakeMachine{bin: bin, log: filepath.Join(dir, "calls.log")}
	stub := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, real := range []string{"bash", "sed", "grep", "head"} {
		p, err := exec.LookPath(real)
		if err != nil {
			t.Fatalf("the test needs %s: %v", real, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, real)); err != nil {
			t.Fatal(err)
		}
	}
	uid := m.uid
	if uid == "" {
		uid = "0"
	}
	stub("id", "echo "+uid)
	stub("dpkg-query", `for p in `+strings.Join(m.dpkgKnows, " ")+`; do [ "$p" = "$3" ] && { printf 'install ok installed'; exit 0; }; done; exit 1`)
	stub("java", `echo 'openjdk version "`+m.java+`" 2026-01-20' >&2`)
	stub("apt-get", `echo "apt-get $*" >>`+f.log)
	stub("sudo", `echo "sudo $*" >>`+f.log+`; exec "$@"`)
	for _, c := range []string{"kcat", "aws", "javac", "mvn", "chromium", "make", "git", "go"} {
		stub(c, "exit 0")
	}
	for _, c := range m.missing {
		if err := os.Remove(filepath.Join(bin, c)); err != nil {
			t.Fatalf("remove %s from the fake PATH: %v", c, err)
		}
	}
	return f
}

// calls returns the recorded apt-get and sudo command lines.
func (f fakeMachine) calls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(f.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestSystemPackages runs .ci/system-packages on fake machines: it installs
// exactly the missing packages with apt-get (through sudo when not root),
// does nothing when everything is present, and fails naming the packages
// when it cannot install them.
func TestSystemPackages(t *testing.T) {
	script, err := filepath.Abs(filepath.Join(root, ".ci", "system-packages"))
	if err != nil {
		t.Fatal(err)
	}
	install := func(pkgs string) []string {
		return []string{"apt-get update -q", "apt-get install -y -q --no-install-recommends " + pkgs}
	}
	tests := []struct {
		name    string
		m       machine
		code    int
		calls   []string
		message string // in the output
	}{
		{name: "everything present: nothing installed",
			m: machine{java: "17.0.15"}, message: "system packages present"},
		{name: "JDK 21 is enough",
			m: machine{java: "21.0.2"}, message: "system packages present"},
		{name: "kcat and awscli known to dpkg but not on PATH count as present",
			m: machine{java: "17.0.15", missing: []string{"kcat", "aws"}, dpkgKnows: []string{"kcat", "awscli"}}, message: "system packages present"},
		{name: "fresh Debian as root: every package",
			m:     machine{missing: []string{"kcat", "aws", "java", "javac", "mvn", "chromium", "make", "git"}},
			calls: install("kcat awscli openjdk-17-jdk-headless maven chromium make git")},
		{name: "no chromium: chromium",
			m: machine{java: "17.0.15", missing: []string{"chromium"}}, calls: install("chromium")},
		{name: "chromium known to dpkg but not on PATH counts as present",
			m: machine{java: "17.0.15", missing: []string{"chromium"}, dpkgKnows: []string{"chromium"}}, message: "system packages present"},
		{name: "JDK 11: a JDK 17",
			m: machine{java: "11.0.20"}, calls: install("openjdk-17-jdk-headless")},
		{name: "a JRE without javac: a JDK 17",
			m: machine{java: "17.0.15", missing: []string{"javac"}}, calls: install("openjdk-17-jdk-headless")},
		{name: "not root: through sudo",
			m:     machine{java: "17.0.15", uid: "1000", missing: []string{"kcat", "mvn"}},
			calls: []string{"sudo apt-get update -q", "apt-get update -q", "sudo apt-get install -y -q --no-install-recommends kcat maven", "apt-get install -y -q --no-install-recommends kcat maven"}},
		{name: "not root and no sudo: refused, naming the packages",
			m: machine{java: "17.0.15", uid: "1000", missing: []string{"kcat", "sudo"}}, code: 1, message: "system packages missing: kcat; not root and no sudo"},
		{name: "no apt-get: refused, naming the packages",
			m: machine{java: "17.0.15", missing: []string{"aws", "apt-get"}}, code: 1, message: "system packages missing: awscli; no apt-get on this machine"},
		{name: "no Go: named, with where to get it",
			m: machine{java: "17.0.15", missing: []string{"go"}}, code: 1, message: "go is not installed: install the Go version go.mod names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeMachine(t, tt.m)
			cmd := exec.Command(filepath.Join(f.bin, "bash"), script)
			cmd.Env = []string{"PATH=" + f.bin, "HOME=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, out)
			}
			if got := f.calls(t); strings.Join(got, "\n") != strings.Join(tt.calls, "\n") {
				t.Errorf("apt-get and sudo calls:\n%s\nwant:\n%s\noutput:\n%s", strings.Join(got, "\n"), strings.Join(tt.calls, "\n"), out)
			}
			if !strings.Contains(string(out), tt.message) {
				t.Errorf("output lacks %q:\n%s", tt.message, out)
			}
		})
	}
}

// TestSystemPackagesWrittenOnce: `make tools` (and so `make test`) runs
// .ci/system-packages before anything else, and .ci/run runs the same
// script rather than installing packages itself.
func TestSystemPackagesWrittenOnce(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("the test needs make: %v", err)
	}
	out, err := exec.Command("make", "-C", root, "-n", "--no-print-directory", "tools", "TOOLS_DIR="+t.TempDir()).CombinedOutput()
	if err != nil {
		t.Fatalf("make -n tools: %v\n%s", err, out)
	}
	if first, _, _ := strings.Cut(string(out), "\n"); first != ".ci/system-packages" {
		t.Errorf("make -n tools runs first %q, want .ci/system-packages:\n%s", first, out)
	}
	run, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\.ci/system-packages$`).Match(run) {
		t.Error(".ci/run does not run .ci/system-packages")
	}
	if regexp.MustCompile(`(?m)^[^#]*apt-get`).Match(run) {
		t.Error(".ci/run installs packages itself (apt-get): the list belongs to .ci/system-packages alone")
	}
}
