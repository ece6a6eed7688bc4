package statedir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"time"
)

// What RocksDB writes into a store's own files about when they were made.
// The content of a file survives a copy (cp, rsync, os.CopyFS) and a touch;
// its modification time does not. See DESIGN.md, Non-obvious invariants.

// SST table properties (RocksDB table/table_properties.cc,
// TablePropertiesNames), in seconds since the Unix epoch, 0 when unknown.
const (
	// sstCreationTime is the oldest ancestor time: when the oldest data
	// in the file first reached the store (kept through compactions).
	sstCreationTime = "rocksdb.creation.time"
	// sstFileCreationTime is when the file itself was written.
	sstFileCreationTime = "rocksdb.file.creation.time"
	sstPropertiesBlock  = "rocksdb.properties"
)

// Block-based table footer (RocksDB table/format.cc, Footer): 53 bytes for
// format_version >= 1; format_version 6 replaces the block handles by an
// extended magic and the metaindex block's size.
const (
	sstFooterLen      = 53
	sstMagic          = 0x88e241b785f4cff7 // kBlockBasedTableMagicNumber
	sstBlockTrailer   = 5                  // compression type, checksum
	sstMaxMetaBlock   = 1 << 20
	sstNoCompression  = 0
	sstExtendedMagic  = "\x3e\x00\x7a\x00"
	sstRestartTypeBit = 1 << 31 // packed into num_restarts by the data block hash index
)

var (
	sstFile = regexp.MustCompile(`^[0-9]+\.sst$`)
	// rotatedLog is the name RocksDB gives the previous info LOG when it
	// opens a store again: LOG.old.<microseconds since the epoch>
	// (logging/auto_roll_logger.cc, OldInfoLogFileName).
	rotatedLog = regexp.MustCompile(`^LOG\.old\.([0-9]{10,20})$`)
)

// sstCreated returns the earliest time an SST file's table properties
// record (rocksdb.creation.time, rocksdb.file.creation.time; zero when
// both are 0). It reads the footer, the metaindex block and the
// properties block, which RocksDB writes uncompressed; a file in another
// format (plain table, format_version 0) or a compressed properties block
// is an error.
func sstCreated(path string) (time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}, err
	}
	size := fi.Size()
	if size < sstFooterLen {
		return time.Time{}, fmt.Errorf("%s: %d bytes, too short for an SST file", path, size)
	}
	footer := make([]byte, sstFooterLen)
	if _, err := f.ReadAt(footer, size-sstFooterLen); err != nil {
		return time.Time{}, fmt.Errorf("%s: read the footer: %w", path, err)
	}
	if binary.LittleEndian.Uint64(footer[45:]) != sstMagic {
		return time.Time{}, fmt.Errorf("%s: not a block-based table (format_version >= 1)", path)
	}
	footerAt := size - sstFooterLen
	var metaOff, metaSize uint64
	if version := binary.LittleEndian.Uint32(footer[41:45]); version >= 6 {
		if string(footer[1:5]) != sstExtendedMagic {
			return time.Time{}, fmt.Errorf("%s: format_version %d footer without its extended magic", path, version)
		}
		metaSize = uint64(binary.LittleEndian.Uint32(footer[13:17]))
		if int64(metaSize)+sstBlockTrailer > footerAt {
			return time.Time{}, fmt.Errorf("%s: metaindex block of %d bytes does not fit", path, metaSize)
		}
		metaOff = uint64(footerAt) - metaSize - sstBlockTrailer
	} else {
		var n1, n2 int
		metaOff, n1 = binary.Uvarint(footer[1:])
		metaSize, n2 = binary.Uvarint(footer[1+max(n1, 0):])
		if n1 <= 0 || n2 <= 0 {
			return time.Time{}, fmt.Errorf("%s: bad metaindex handle in the footer", path)
		}
	}
	meta, err := sstBlock(f, size, metaOff, metaSize)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: metaindex block: %w", path, err)
	}
	handle, ok := meta[sstPropertiesBlock]
	if !ok {
		return time.Time{}, fmt.Errorf("%s: no %s block", path, sstPropertiesBlock)
	}
	propOff, n1 := binary.Uvarint(handle)
	propSize, n2 := binary.Uvarint(handle[max(n1, 0):])
	if n1 <= 0 || n2 <= 0 {
		return time.Time{}, fmt.Errorf("%s: bad %s handle", path, sstPropertiesBlock)
	}
	props, err := sstBlock(f, size, propOff, propSize)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: properties block: %w", path, err)
	}
	var earliest uint64
	for _, name := range []string{sstCreationTime, sstFileCreationTime} {
		v, ok := props[name]
		if !ok {
			continue
		}
		secs, n := binary.Uvarint(v)
		if n <= 0 {
			return time.Time{}, fmt.Errorf("%s: property %s is not a varint", path, name)
		}
		if secs > 0 && (earliest == 0 || secs < earliest) {
			earliest = secs
		}
	}
	if earliest == 0 {
		return time.Time{}, nil
	}
	return time.Unix(int64(earliest), 0), nil
}

// sstBlock reads an uncompressed block (RocksDB table/block_based/block.h:
// entries of shared, unshared and value lengths as varint32, the key's
// unshared bytes and the value; then the restart points and their count)
// and returns its keys and values.
func sstBlock(r io.ReaderAt, fileSize int64, off, size uint64) (map[string][]byte, error) {
	if size < 4 || size > sstMaxMetaBlock || off+size+sstBlockTrailer > uint64(fileSize) {
		return nil, fmt.Errorf("block at %d of %d bytes is out of the file", off, size)
	}
	buf := make([]byte, size+1)
	if _, err := r.ReadAt(buf, int64(off)); err != nil {
		return nil, err
	}
	if buf[size] != sstNoCompression {
		return nil, fmt.Errorf("block at %d is compressed (type %d)", off, buf[size])
	}
	data := buf[:size]
	restarts := uint64(binary.LittleEndian.Uint32(data[size-4:]) &^ sstRestartTypeBit)
	if restarts == 0 || 4+4*restarts > size {
		return nil, fmt.Errorf("block at %d: %d restart points do not fit", off, restarts)
	}
	data = data[:size-4-4*restarts]
	out := map[string][]byte{}
	var key []byte
	for len(data) > 0 {
		var l [3]uint64
		for i := range l {
			v, n := binary.Uvarint(data)
			if n <= 0 {
				return nil, errors.New("bad entry header")
			}
			l[i], data = v, data[n:]
		}
		shared, unshared, vlen := l[0], l[1], l[2]
		if shared > uint64(len(key)) || unshared+vlen > uint64(len(data)) {
			return nil, errors.New("entry out of the block")
		}
		key = append(key[:shared], data[:unshared]...)
		out[string(key)] = data[unshared : unshared+vlen]
		data = data[unshared+vlen:]
	}
	return out, nil
}

// rotatedLogTime returns the time in the name of a rotated RocksDB info
// log (LOG.old.<microseconds>): the store existed and was opened again then.
func rotatedLogTime(name string) (time.Time, bool) {
	m := rotatedLog.FindStringSubmatch(name)
	if m == nil {
		return time.Time{}, false
	}
	us, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMicro(us), true
}
