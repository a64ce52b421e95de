package local

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/sessionmem/sessionmem/storage"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"
)

// On-disk constants. See doc.go for the layout they describe.
const (
	// headerMagic starts the skippable frame at offset 0 of <id>.zst that carries the Header.
	headerMagic = 0x184D2A50
	// recordMagic starts the 32-byte skippable frame in front of every sealed zstd frame.
	recordMagic = 0x184D2A5E
	// recordHeaderSize is the size of a record header: 8 bytes of skippable-frame header plus a
	// 24-byte payload (u32 frame length, u32 record count, u64 first seq, u64 xxh64).
	recordHeaderSize = 32
	// maxHeaderFrame bounds the header frame so a damaged length cannot make us allocate GiBs.
	maxHeaderFrame = 1 << 20
	// maxContentSize bounds a frame's declared content size for the same reason.
	maxContentSize = 1 << 32

	zstSuffix  = ".zst"
	tailSuffix = ".tail.jsonl"
	lockSuffix = ".lock"
)

func checkID(id string) error {
	if !storage.ValidID(id) {
		return fmt.Errorf("%w %q: use 1-128 characters from A-Z a-z 0-9 _ . - (not \".\" or \"..\")", storage.ErrInvalidID, id)
	}
	return nil
}

// headerJSON is the header frame's JSON: the session's header, and the sessionmem version
// that wrote the file (storage.WriterVersion; absent in files of earlier builds).
type headerJSON struct {
	storage.Header
	By string `json:"by,omitempty"`
}

// encodeHeaderFrame returns the skippable frame holding h as JSON.
func encodeHeaderFrame(h storage.Header) ([]byte, error) {
	js, err := json.Marshal(headerJSON{Header: h, By: storage.WriterVersion()})
	if err != nil {
		return nil, fmt.Errorf("encode header: %w", err)
	}
	b := make([]byte, 8, 8+len(js))
	binary.LittleEndian.PutUint32(b[0:], headerMagic)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(js)))
	return append(b, js...), nil
}

// versionError says which file is too new and which sessionmem wrote it (by, when the file
// records it), so the user knows what to upgrade to rather than repair.
func versionError(what string, v, newest int, by string) error {
	return &storage.NewerFormatError{What: what, Version: v, Newest: newest, WrittenBy: by}
}

// parseHeaderPayload decodes the header JSON and checks its version.
func parseHeaderPayload(js []byte, path string) (storage.Header, error) {
	var hj headerJSON
	if err := json.Unmarshal(js, &hj); err != nil {
		return storage.Header{}, fmt.Errorf("%s: header frame is not valid JSON (%v): %w", path, err, storage.ErrCorrupt)
	}
	h := hj.Header
	if h.Version > FormatVersion {
		return storage.Header{}, versionError(path, h.Version, FormatVersion, hj.By)
	}
	if h.Version < 1 {
		return storage.Header{}, fmt.Errorf("%s: header frame has no format version: %w", path, storage.ErrCorrupt)
	}
	return h, nil
}

// recHeader is the decoded payload of a record's 32-byte skippable frame.
type recHeader struct {
	frameLen uint32
	count    uint32
	first    uint64
	sum      uint64
}

// recordSum is the xxh64 stored in a record header. It covers the header's own length, count
// and first-seq fields as well as the frame, so a flipped bit in any of them is detected
// without decompressing.
func recordSum(hdr []byte, frame []byte) uint64 {
	d := xxhash.New()
	_, _ = d.Write(hdr[8:24])
	_, _ = d.Write(frame)
	return d.Sum64()
}

func putRecordHeader(dst []byte, frame []byte, count uint32, first uint64) {
	binary.LittleEndian.PutUint32(dst[0:], recordMagic)
	binary.LittleEndian.PutUint32(dst[4:], recordHeaderSize-8)
	binary.LittleEndian.PutUint32(dst[8:], uint32(len(frame)))
	binary.LittleEndian.PutUint32(dst[12:], count)
	binary.LittleEndian.PutUint64(dst[16:], first)
	binary.LittleEndian.PutUint64(dst[24:], recordSum(dst, frame))
}

// parseRecordHeader checks the magic and the fixed payload size; the caller checks bounds,
// sequence and checksum.
func parseRecordHeader(b []byte) (recHeader, bool) {
	if len(b) < recordHeaderSize ||
		binary.LittleEndian.Uint32(b[0:]) != recordMagic ||
		binary.LittleEndian.Uint32(b[4:]) != recordHeaderSize-8 {
		return recHeader{}, false
	}
	h := recHeader{
		frameLen: binary.LittleEndian.Uint32(b[8:]),
		count:    binary.LittleEndian.Uint32(b[12:]),
		first:    binary.LittleEndian.Uint64(b[16:]),
		sum:      binary.LittleEndian.Uint64(b[24:]),
	}
	if h.frameLen == 0 || h.count == 0 || h.first == 0 || h.first > math.MaxUint64-uint64(h.count) {
		return recHeader{}, false
	}
	return h, true
}

// frameContentSize reads the content size from a zstd frame header (0, false if absent or
// implausible).
func frameContentSize(frame []byte) (uint64, bool) {
	var zh zstd.Header
	if err := zh.Decode(frame); err != nil || !zh.HasFCS || zh.FrameContentSize > maxContentSize {
		return 0, false
	}
	return zh.FrameContentSize, true
}

// tailHeader is the first line of every <id>.tail.jsonl.
type tailHeader struct {
	Version int    `json:"v"`
	Tail    string `json:"tail"`
	// By is the sessionmem version that wrote the tail (storage.WriterVersion).
	By string `json:"by,omitempty"`
}

// TailFormatVersion is the version a new tail's header line carries. Version 2 tails are
// zero-padded ahead of their data (doc.go, "Padded tails"); version 1 tails end where their
// data ends. This package reads both and writes new tails as version 2; a version 1 tail is
// replaced by a version 2 one when it is next emptied by a seal.
const TailFormatVersion = 2

// paddedTailVersion is the first tail version whose writers pad ahead of the data.
const paddedTailVersion = 2

func encodeTailHeader(id string) []byte {
	b, _ := json.Marshal(tailHeader{Version: TailFormatVersion, Tail: id, By: storage.WriterVersion()})
	return append(b, '\n')
}

// Padding ahead of a tail's data: an append that does not fit in the padding writes its
// lines followed by padFor bytes of zeros (and fsyncs, as the file grew); the appends after
// it write into those zeros and only fdatasync.
const (
	minTailPad = 64 << 10
	maxTailPad = 1 << 20
	padAlign   = 4 << 10
)

// padFor is how many zero bytes an extending append writes after its lines, which end at end
// with data bytes of records in the tail: about as much as the tail holds already (so
// extensions get rarer as it grows, and the padding never exceeds the data by more than
// minTailPad), no more than the tail can take before it is sealed at sealBytes, within
// [minTailPad, maxTailPad], and so that the file ends on a 4 KiB boundary.
func padFor(end, data, sealBytes int64) int64 {
	pad := min(data, sealBytes-data)
	pad = min(max(pad, minTailPad), maxTailPad)
	return (end+pad+padAlign-1)/padAlign*padAlign - end
}
