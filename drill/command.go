package drill

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
)

// shellSyntax holds the characters that make a command more than one
// program with plain arguments: quoting, expansion, globbing, redirection,
// lists, pipes and subshells. A command whose program word holds one of
// them, or whose text holds a list or pipe operator, is left to the shell.
const shellSyntax = "'\"`$\\*?[]{}()<>|&;~#!\n"

// shellBuiltins are the words /bin/sh runs without a file on PATH: the
// POSIX reserved words and the builtins a start command begins with.
var shellBuiltins = map[string]bool{
	"!": true, "{": true, "}": true, "case": true, "do": true, "done": true, "elif": true, "else": true,
	"esac": true, "fi": true, "for": true, "if": true, "in": true, "then": true, "until": true, "while": true,
	".": true, ":": true, "break": true, "cd": true, "command": true, "continue": true, "eval": true,
	"export": true, "readonly": true, "return": true, "set": true, "shift": true, "source": true,
	"test": true, "[": true, "times": true, "trap": true, "ulimit": true, "umask": true, "unset": true, "wait": true,
	"true": true, "false": true, "echo": true, "printf": true, "read": true, "exit": true,
}

// CheckCommand checks, before the drill writes anything, that the program
// of App.Command can be run as /bin/sh -c would run it: the first word
// after an optional exec and any NAME=value assignments must be an
// executable file, looked up on PATH when it has no slash (exec.LookPath).
// A command with shell syntax (quotes, $, globs, redirections, ;, &, |,
// subshells) or starting with a shell builtin is not checked: the shell
// decides. The error names the word and why it cannot run (a directory, no
// such file, not on PATH, not executable); the shell would exit 126 or 127
// only after the backup, the restore and the verify.
func CheckCommand(command string) error {
	if strings.ContainsAny(command, "|&;()<>`\n") {
		return nil
	}
	words := strings.Fields(command)
	for len(words) > 0 && (words[0] == "exec" || isAssignment(words[0])) {
		words = words[1:]
	}
	if len(words) == 0 {
		return nil
	}
	prog := words[0]
	if strings.ContainsAny(prog, shellSyntax) || shellBuiltins[prog] {
		return nil
	}
	if !strings.Contains(prog, "/") {
		if _, err := exec.LookPath(prog); err != nil {
			if errors.Is(err, exec.ErrNotFound) {
				return fmt.Errorf("%s is not found on PATH (PATH=%s)", prog, os.Getenv("PATH"))
			}
			return fmt.Errorf("%s: %w", prog, err)
		}
		return nil
	}
	fi, err := os.Stat(prog)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", prog)
	case err != nil:
		return fmt.Errorf("%s: %w", prog, err)
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not a program", prog)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable (chmod +x %s, or run it with its interpreter, e.g. sh %s)", prog, prog, prog)
	}
	return nil
}

// isAssignment reports whether word is a shell variable assignment
// (NAME=value) before the program word.
func isAssignment(word string) bool {
	name, _, ok := strings.Cut(word, "=")
	return ok && config.ValidEnvName(name)
}
