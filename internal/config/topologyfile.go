package config

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/kafkastreams-dr/kafkastreams-dr/topicfilter"
)

// ReadTopologyFile reads the Topology#describe() text at path, as every
// topology text is read (topology_file; --topology of topics, backup and
// init): like every file a config names, a regular file of at most
// MaxFileBytes (1 MiB), checked with os.Stat before it is opened (a FIFO,
// a device such as /dev/zero, a socket or a directory is refused at once;
// a larger file before more than the limit is read). It returns the text
// as read (its sha256 is the topology's digest) and the parsed topology.
//
// Errors name the file and say what is wrong, for the caller to put after
// the key or flag: `"app.txt" cannot be read: it does not exist`,
// `/dev/zero is a character device, not a regular file: give the path of
// a regular file`, `"app.txt": topology description line 3: ...`. A file
// that cannot be read (missing, not regular, too large) is a
// *TopologyReadError; a text that is not a describe() text is not.
func ReadTopologyFile(path string) (string, *topicfilter.Topology, error) {
	b, err := readLimited(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%q cannot be read: it does not exist", path)
		}
		return "", nil, &TopologyReadError{err}
	}
	text := string(b)
	top, err := topicfilter.ParseTopology(text)
	if err != nil {
		return "", nil, fmt.Errorf("%q: %w", path, err)
	}
	return text, top, nil
}

// TopologyReadError is ReadTopologyFile's error for a file that cannot be
// read: missing, unreadable, not a regular file or over MaxFileBytes (the
// fix is another file, not another text).
type TopologyReadError struct{ Err error }

func (e *TopologyReadError) Error() string { return e.Err.Error() }
func (e *TopologyReadError) Unwrap() error { return e.Err }
