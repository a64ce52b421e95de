package ftsindex

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Where a segment's postings live. A segment of fewer than packLimit docs keeps all of them
// in one blob (segments.packed: its terms in order, each with its list), so that indexing a
// save writes one row, not one per distinct term (a row costs SQLite about 4 µs, and a
// 2 KB message brings about 150 terms); searches read and cache the whole small blob. A
// larger segment has a postings row per term, so a search reads only its words' lists.
const packLimit = 4096

// packedSeg is a packed segment's postings, decoded: the blob, and where each term's entry
// starts in it. Only 4 bytes per term besides the blob: a process keeps every packed
// segment's postings (the segments saves have just written), and strings and slice headers
// per term cost more than the terms and lists themselves.
type packedSeg struct {
	blob []byte
	offs []uint32 // offs[i]: term i's entry (the term's length, the term, the list's length, the list)
}

// len returns the number of terms.
func (p *packedSeg) len() int { return len(p.offs) }

// entry returns term i and its list, both pointing into the blob.
func (p *packedSeg) entry(i int) (term, list []byte) {
	r := reader{b: p.blob, i: int(p.offs[i])}
	term = r.bytes(int(r.uvarint()))
	list = r.bytes(int(r.uvarint()))
	return term, list
}

// termAt returns term i.
func (p *packedSeg) termAt(i int) []byte {
	t, _ := p.entry(i)
	return t
}

// search returns the index of the first term not before t.
func (p *packedSeg) search(t string) int {
	return sort.Search(len(p.offs), func(i int) bool { return string(p.termAt(i)) >= t })
}

// encodePacked serialises rows (in term order): the count, then per term its length, the
// term, the list's length and the list (encodePostings), as varints and bytes.
func encodePacked(rows []segRow) []byte {
	n := 8
	for _, r := range rows {
		n += len(r.term) + len(r.data) + 8
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(len(rows)))
	for _, r := range rows {
		b = binary.AppendUvarint(b, uint64(len(r.term)))
		b = append(b, r.term...)
		b = binary.AppendUvarint(b, uint64(len(r.data)))
		b = append(b, r.data...)
	}
	return b
}

// decodePacked parses what encodePacked wrote; the lists point into b.
func decodePacked(b []byte) (*packedSeg, error) {
	r := reader{b: b}
	n := int(r.uvarint())
	if r.err != nil || n > len(b) || len(b) > 1<<32-1 {
		return nil, fmt.Errorf("%w: packed header", errBlob)
	}
	p := &packedSeg{blob: b, offs: make([]uint32, n)}
	var prev []byte
	for i := range n {
		p.offs[i] = uint32(r.i)
		t := r.bytes(int(r.uvarint()))
		r.bytes(int(r.uvarint()))
		if r.err != nil || i > 0 && string(t) <= string(prev) {
			return nil, fmt.Errorf("%w: packed term %d", errBlob, i)
		}
		prev = t
	}
	if r.i != len(b) {
		return nil, fmt.Errorf("%w: packed length", errBlob)
	}
	return p, nil
}

// termSource reads one segment's postings, packed or in rows.
type termSource struct {
	ctx    context.Context
	q      querier
	seg    int64
	packed *packedSeg // nil: rows in the postings table
}

// get returns the lists of the terms that the segment has.
func (ts termSource) get(terms []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(terms) == 0 {
		return out, nil
	}
	if p := ts.packed; p != nil {
		for _, t := range terms {
			if i := p.search(t); i < p.len() {
				if term, list := p.entry(i); string(term) == t {
					out[t] = list
				}
			}
		}
		return out, nil
	}
	args := []any{ts.seg}
	for _, t := range terms {
		args = append(args, t)
	}
	rows, err := ts.q.QueryContext(ts.ctx, `SELECT term, data FROM postings WHERE seg = ? AND term IN (?`+strings.Repeat(`, ?`, len(terms)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var b []byte
		if err := rows.Scan(&t, &b); err != nil {
			return nil, err
		}
		out[t] = b
	}
	return out, rows.Err()
}

// iter walks the segment's terms in order from from (inclusive) to to (exclusive; "": to
// the end).
func (ts termSource) iter(from, to string) (termIter, error) {
	if p := ts.packed; p != nil {
		i := p.search(from)
		j := p.len()
		if to != "" {
			j = p.search(to)
		}
		return &packedIter{p: p, i: i - 1, end: max(i, j)}, nil
	}
	q, args := `SELECT term, data FROM postings WHERE seg = ? AND term >= ?`, []any{ts.seg, from}
	if to != "" {
		q += ` AND term < ?`
		args = append(args, to)
	}
	rows, err := ts.q.QueryContext(ts.ctx, q+` ORDER BY term`, args...)
	if err != nil {
		return nil, err
	}
	return &rowIter{rows: rows}, nil
}

// termIter walks terms in order: next, then term and data while next was true.
type termIter interface {
	next() (bool, error)
	term() string
	data() []byte
	close()
}

type packedIter struct {
	p      *packedSeg
	i, end int
}

func (it *packedIter) next() (bool, error) {
	it.i++
	return it.i < it.end, nil
}
func (it *packedIter) term() string { return string(it.p.termAt(it.i)) }
func (it *packedIter) data() []byte { _, l := it.p.entry(it.i); return l }
func (it *packedIter) close()       {}

type rowIter struct {
	rows *sql.Rows
	t    string
	d    []byte
}

func (it *rowIter) next() (bool, error) {
	if !it.rows.Next() {
		return false, it.rows.Err()
	}
	return true, it.rows.Scan(&it.t, &it.d)
}
func (it *rowIter) term() string { return it.t }
func (it *rowIter) data() []byte { return it.d }
func (it *rowIter) close()       { it.rows.Close() }

// readSegment reads a segment's docs and, when packed, its postings.
func readSegment(ctx context.Context, q querier, id int64) (*segDocs, *packedSeg, error) {
	var docsBlob, packedBlob []byte
	if err := q.QueryRowContext(ctx, `SELECT docs, packed FROM segments WHERE id = ?`, id).Scan(&docsBlob, &packedBlob); err != nil {
		return nil, nil, err
	}
	docsBlob, err := unpack(docsBlob)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: segment %d: %w", ErrCorrupt, id, err)
	}
	d, err := decodeDocs(docsBlob)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: segment %d: %w", ErrCorrupt, id, err)
	}
	if packedBlob == nil {
		return d, nil, nil
	}
	if packedBlob, err = unpack(packedBlob); err != nil {
		return nil, nil, fmt.Errorf("%w: segment %d: %w", ErrCorrupt, id, err)
	}
	p, err := decodePacked(packedBlob)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: segment %d: %w", ErrCorrupt, id, err)
	}
	return d, p, nil
}

// A segment's blobs (its docs, and a small segment's postings) are stored zstd-compressed,
// behind a byte that says so: sorted terms and varint lists shrink by about a third, and
// every process decodes a segment's blobs once (segments never change) and keeps them.
const (
	blobRaw  = 0
	blobZstd = 1
)

var (
	// A 1 MiB window: the encoder keeps a history buffer of the window plus a block with
	// lower memory (twice the window without it: the default 8 MiB window held 16 MiB of a
	// saving process's heap for good after the first large segment), and postings lists find
	// their matches close by. Entropy coding even where the encoder finds no matches: a
	// segment's docs (varints and hex entry ids, few repeats of four bytes or more) were
	// otherwise often stored as they are, 17 bytes a doc instead of 12.
	blobEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true),
		zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(1<<20), zstd.WithAllLitEntropyCompression(true))
	blobDec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1<<30))
)

// pack compresses a blob when that saves space.
func pack(b []byte) []byte {
	if len(b) >= 128 {
		if z := blobEnc.EncodeAll(b, []byte{blobZstd}); len(z) < len(b) {
			return z
		}
	}
	return append([]byte{blobRaw}, b...)
}

// unpack undoes pack.
func unpack(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, errBlob
	}
	switch b[0] {
	case blobRaw:
		return b[1:], nil
	case blobZstd:
		return blobDec.DecodeAll(b[1:], nil)
	}
	return nil, fmt.Errorf("%w: blob kind %d", errBlob, b[0])
}
