package postgres

import (
	"bytes"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/klauspost/compress/zstd"

	"github.com/sessionmem/sessionmem/storage"
)

// Chunks are zstd frames (content size and checksum included) of JSONL lines, each line a
// stored record `{"seq":N,...}`. The encoder and decoder are shared: EncodeAll and DecodeAll
// are safe for concurrent use.
// Level-2 chunks, written once per hundred records or so and kept for good, use the better
// (slower) level.
var (
	encoder, _   = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithLowerEncoderMem(true))
	encoderL2, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithLowerEncoderMem(true))
	decoder, _   = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxChunkRaw), zstd.WithDecoderConcurrency(0))
)

// maxChunkRaw bounds what one chunk may decode to, so a damaged size cannot make us allocate
// without limit. A chunk is at most the seal threshold or one record, and a record is at
// most what a tool call carries.
const maxChunkRaw = 1 << 30

func compress(lines []byte, level int) []byte {
	enc := encoder
	if level >= level2 {
		enc = encoderL2
	}
	return enc.EncodeAll(lines, make([]byte, 0, len(lines)/3+64))
}

// chunk is one row of sessionmem_chunks as read.
type chunk struct {
	first, last uint64
	raw         int64
	level       int
	data        []byte
}

// chunkColumns are what scanChunks reads.
const chunkColumns = "first_seq, last_seq, raw_bytes, level, data"

// scanChunks reads every row and closes rows.
func scanChunks(rows pgx.Rows) ([]chunk, error) {
	defer rows.Close()
	var out []chunk
	for rows.Next() {
		var c chunk
		var first, last int64
		var level int16
		if err := rows.Scan(&first, &last, &c.raw, &level, &c.data); err != nil {
			return nil, err
		}
		c.first, c.last, c.level = uint64(first), uint64(last), int(level)
		out = append(out, c)
	}
	return out, rows.Err()
}

// decodeAppend decodes c (checked as decode does) and appends its lines to dst.
func (c *chunk) decodeAppend(id string, dst []byte) ([]byte, error) {
	content, err := c.decode(id, nil)
	if err != nil {
		return dst, err
	}
	return append(dst, content...), nil
}

// decode decompresses c into dst (reused) and checks it completely before anything of it is
// used: the checksum, the size, and one `{"seq":N` line for every seq from first to last.
func (c *chunk) decode(id string, dst []byte) ([]byte, error) {
	corrupt := func(why string, a ...any) error {
		return fmt.Errorf("session %s: chunk %d-%d: %s: %w", id, c.first, c.last, fmt.Sprintf(why, a...), storage.ErrCorrupt)
	}
	if c.raw < 0 || c.raw > maxChunkRaw {
		return dst, corrupt("raw size %d out of range", c.raw)
	}
	if int64(cap(dst)) < c.raw {
		dst = make([]byte, 0, c.raw)
	}
	out, err := decoder.DecodeAll(c.data, dst[:0])
	if err != nil {
		return dst, corrupt("does not decode (%v)", err)
	}
	if int64(len(out)) != c.raw {
		return out, corrupt("decodes to %d bytes, %d recorded", len(out), c.raw)
	}
	seq := c.first
	for rest := out; len(rest) > 0; seq++ {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return out, corrupt("last line has no newline")
		}
		if n, ok := storage.RecordSeq(rest[:nl]); !ok || n != seq || seq > c.last {
			return out, corrupt("line %d is not record %d", seq-c.first+1, seq)
		}
		rest = rest[nl+1:]
	}
	if seq != c.last+1 {
		return out, corrupt("holds %d records, %d recorded", seq-c.first, c.last-c.first+1)
	}
	return out, nil
}
