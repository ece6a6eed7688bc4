package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxFileBytes is the largest file config reads: the config file itself
// and every file it names (TLS ca_file, cert_file and key_file, SASL
// password_file): 1 MiB. A config is a few KiB and a PEM CA bundle a few
// hundred (the Mozilla roots are about 200 KiB); a larger file is the
// wrong file (a log, a device, a backup segment), refused before it is
// held in memory.
const MaxFileBytes = 1 << 20

// readLimited reads the regular file at path, at most MaxFileBytes. The
// file is checked with os.Stat before it is opened: a FIFO, a device, a
// socket or a directory is refused at once (opening a FIFO blocks until a
// writer comes, reading /dev/zero never ends). Errors name the file and
// say what is wrong, e.g. "/tmp/app.yaml is a named pipe (FIFO), not a
// regular file" or "cannot read /tmp/app.yaml: permission denied".
func readLimited(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, unwrapPath(err))
	}
	if err := regular(path, fi); err != nil {
		return nil, err
	}
	if fi.Size() > MaxFileBytes {
		return nil, tooLarge(path, fi.Size())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, unwrapPath(err))
	}
	defer f.Close()
	// The file may have been replaced or may grow after Stat: check again
	// what was opened, and never read past the limit.
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, unwrapPath(err))
	}
	if err := regular(path, fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, unwrapPath(err))
	}
	if len(b) > MaxFileBytes {
		return nil, tooLarge(path, int64(len(b)))
	}
	return b, nil
}

func tooLarge(path string, size int64) error {
	return fmt.Errorf("%s is larger than the %d-byte (1 MiB) limit for config files and the files a config names (%d bytes or more): is it the right file?", path, MaxFileBytes, size)
}

// regular refuses anything but a regular file, naming what it is.
func regular(path string, fi fs.FileInfo) error {
	m := fi.Mode()
	if m.IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%s is %s, not a regular file: give the path of a regular file", path, what)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readConfigFile reads the config file itself; see readLimited.
func readConfigFile(path string) ([]byte, error) {
	b, err := readLimited(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return b, nil
}
