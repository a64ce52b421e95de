package ftsindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/sessionmem/sessionmem/storage/fts"
)

// A segment is an immutable piece of the inverted index: the docs of one or more Index calls
// (merged later), numbered 0..n-1 within it (ordinals), with their attributes in one blob
// (segments.docs) and, for every term they contain, one postings row (term, seg): the
// ordinals holding the term and how often. Segments cover disjoint, increasing ranges of
// doc ids, so the list of segments ordered by id is the index in indexing order.

// segDocs are the attributes of a segment's docs, by ordinal: what ranking and filtering
// read for every match, so they are arrays in memory rather than rows.
type segDocs struct {
	ids   []int64  // docs.id, ascending
	sess  []int64  // sessions.id
	seqs  []uint64 // the record's seq in its session
	times []int64  // Unix nanoseconds (0: unknown)
	kinds []uint8  // kindMessage or kindSummary
	roles []uint8  // index into roleNames
	lens  []uint32 // number of terms
	// entryIDs holds the docs' entry ids (fts.Doc.EntryID) one after the other, doc i's
	// ending at entryEnds[i] (entry). One blob and offsets rather than a string per doc: a
	// searching process keeps every segment's attributes in memory, and a string header
	// plus its own small allocation took 24 bytes a doc, with pointers for the collector to
	// trace, against 4 bytes and the id's own.
	entryIDs  []byte
	entryEnds []uint32
	// roleNames are the distinct roles of the segment.
	roleNames []string
}

// entryStart is where doc i's entry id starts in entryIDs.
func (d *segDocs) entryStart(i int) uint32 {
	if i == 0 {
		return 0
	}
	return d.entryEnds[i-1]
}

// entry returns doc i's entry id.
func (d *segDocs) entry(i int) string { return string(d.entryIDs[d.entryStart(i):d.entryEnds[i]]) }

const (
	kindMessage uint8 = iota
	kindSummary
)

func kindCode(k string) uint8 {
	if k == fts.KindSummary {
		return kindSummary
	}
	return kindMessage
}

func kindName(c uint8) string {
	if c == kindSummary {
		return fts.KindSummary
	}
	return fts.KindMessage
}

func (d *segDocs) len() int { return len(d.ids) }

// add appends a doc and returns its ordinal.
func (d *segDocs) add(id, sess int64, seq uint64, t int64, kind, role, entry string, n uint32) int {
	ri := slices.Index(d.roleNames, role)
	if ri < 0 {
		ri = len(d.roleNames)
		d.roleNames = append(d.roleNames, strings.Clone(role))
	}
	d.ids = append(d.ids, id)
	d.sess = append(d.sess, sess)
	d.seqs = append(d.seqs, seq)
	d.times = append(d.times, t)
	d.kinds = append(d.kinds, kindCode(kind))
	d.roles = append(d.roles, uint8(ri))
	d.lens = append(d.lens, n)
	d.entryIDs = append(d.entryIDs, entry...)
	d.entryEnds = append(d.entryEnds, uint32(len(d.entryIDs)))
	return len(d.ids) - 1
}

// copyFrom appends doc i of src.
func (d *segDocs) copyFrom(src *segDocs, i int) int {
	return d.add(src.ids[i], src.sess[i], src.seqs[i], src.times[i], kindName(src.kinds[i]), src.roleNames[src.roles[i]], src.entry(i), src.lens[i])
}

// ord returns the ordinal of doc id, or -1.
func (d *segDocs) ord(id int64) int {
	i, ok := slices.BinarySearch(d.ids, id)
	if !ok {
		return -1
	}
	return i
}

const docsFormat = 1

// encode serialises the attributes: a format byte, the count, the role names, then per doc
// the id's delta, session, seq, time's delta (zig-zag), kind<<4|role, length and entry id
// (its length, then its bytes), as varints.
func (d *segDocs) encode() []byte {
	b := make([]byte, 0, 16+12*len(d.ids))
	b = append(b, docsFormat)
	b = binary.AppendUvarint(b, uint64(len(d.ids)))
	b = binary.AppendUvarint(b, uint64(len(d.roleNames)))
	for _, r := range d.roleNames {
		b = binary.AppendUvarint(b, uint64(len(r)))
		b = append(b, r...)
	}
	var prevID, prevT int64
	for i := range d.ids {
		b = binary.AppendUvarint(b, uint64(d.ids[i]-prevID))
		b = binary.AppendUvarint(b, uint64(d.sess[i]))
		b = binary.AppendUvarint(b, d.seqs[i])
		b = binary.AppendVarint(b, d.times[i]-prevT)
		b = append(b, d.kinds[i]<<4|d.roles[i])
		b = binary.AppendUvarint(b, uint64(d.lens[i]))
		e := d.entryIDs[d.entryStart(i):d.entryEnds[i]]
		b = binary.AppendUvarint(b, uint64(len(e)))
		b = append(b, e...)
		prevID, prevT = d.ids[i], d.times[i]
	}
	return b
}

var errBlob = errors.New("malformed segment data")

// decodeDocs parses what encode wrote.
func decodeDocs(b []byte) (*segDocs, error) {
	r := reader{b: b}
	if r.byte() != docsFormat {
		return nil, fmt.Errorf("%w: docs format", errBlob)
	}
	n := int(r.uvarint())
	nr := int(r.uvarint())
	if r.err != nil || n > len(b) || nr > 16 {
		return nil, fmt.Errorf("%w: docs header", errBlob)
	}
	d := &segDocs{ids: make([]int64, n), sess: make([]int64, n), seqs: make([]uint64, n), times: make([]int64, n),
		kinds: make([]uint8, n), roles: make([]uint8, n), lens: make([]uint32, n), entryEnds: make([]uint32, n),
		entryIDs: make([]byte, 0, 8*n)} // entry ids are 8 hex digits unless a client chose them
	for range nr {
		l := int(r.uvarint())
		d.roleNames = append(d.roleNames, string(r.bytes(l)))
	}
	var id, t int64
	for i := range n {
		id += int64(r.uvarint())
		d.ids[i] = id
		d.sess[i] = int64(r.uvarint())
		d.seqs[i] = r.uvarint()
		t += r.varint()
		d.times[i] = t
		kr := r.byte()
		d.kinds[i], d.roles[i] = kr>>4, kr&15
		d.lens[i] = uint32(r.uvarint())
		d.entryIDs = append(d.entryIDs, r.bytes(int(r.uvarint()))...)
		d.entryEnds[i] = uint32(len(d.entryIDs))
		if int(d.roles[i]) >= nr || i > 0 && d.ids[i] <= d.ids[i-1] {
			return nil, fmt.Errorf("%w: doc %d", errBlob, i)
		}
	}
	if r.err != nil || r.i != len(b) {
		return nil, fmt.Errorf("%w: docs length", errBlob)
	}
	if cap(d.entryIDs) > len(d.entryIDs)+len(d.entryIDs)/8 {
		d.entryIDs = slices.Clone(d.entryIDs) // kept as long as the segment is: no slack
	}
	return d, nil
}

// posting is one doc of a term's list: its ordinal and how often the term occurs in it.
type posting struct {
	ord uint32
	tf  uint32
}

// encodePostings serialises a list ordered by ordinal: the count, then per posting
// (gap<<1 | tf>1) and, when tf > 1, tf-2, as varints (gap: ordinals skipped since the
// previous one). Most terms occur once in a doc, so most postings take one or two bytes.
func encodePostings(dst []byte, ps []posting) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ps)))
	prev := int64(-1)
	for _, p := range ps {
		gap := uint64(int64(p.ord) - prev - 1)
		if p.tf > 1 {
			dst = binary.AppendUvarint(dst, gap<<1|1)
			dst = binary.AppendUvarint(dst, uint64(p.tf-2))
		} else {
			dst = binary.AppendUvarint(dst, gap<<1)
		}
		prev = int64(p.ord)
	}
	return dst
}

// postingIter reads what encodePostings wrote.
type postingIter struct {
	r    reader
	left int
	ord  int64
	n    int // count
	max  int // ordinals must be below it
}

func newPostingIter(b []byte, ndocs int) (postingIter, error) {
	it := postingIter{r: reader{b: b}, ord: -1, max: ndocs}
	it.n = int(it.r.uvarint())
	it.left = it.n
	if it.r.err != nil || it.n > ndocs || it.n > len(b) {
		return it, fmt.Errorf("%w: postings header", errBlob)
	}
	return it, nil
}

// next returns the next posting; ok is false at the end or on damage (err then says).
func (it *postingIter) next() (p posting, ok bool) {
	if it.left == 0 {
		return p, false
	}
	it.left--
	v := it.r.uvarint()
	it.ord += int64(v>>1) + 1
	p.ord, p.tf = uint32(it.ord), 1
	if v&1 != 0 {
		p.tf = uint32(it.r.uvarint()) + 2
	}
	if it.r.err != nil || it.ord >= int64(it.max) {
		it.r.err = fmt.Errorf("%w: posting %d", errBlob, it.n-it.left)
		it.left = 0
		return p, false
	}
	return p, true
}

func (it *postingIter) err() error {
	if it.r.err == nil && it.left == 0 && it.r.i != len(it.r.b) {
		return fmt.Errorf("%w: postings length", errBlob)
	}
	return it.r.err
}

// decodePostings returns the whole list.
func decodePostings(b []byte, ndocs int) ([]posting, error) {
	it, err := newPostingIter(b, ndocs)
	if err != nil {
		return nil, err
	}
	out := make([]posting, 0, it.n)
	for p, ok := it.next(); ok; p, ok = it.next() {
		out = append(out, p)
	}
	return out, it.err()
}

// reader decodes varints from a byte slice, remembering the first error.
type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.i:])
	if n <= 0 {
		r.err = errBlob
		return 0
	}
	r.i += n
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.i:])
	if n <= 0 {
		r.err = errBlob
		return 0
	}
	r.i += n
	return v
}

func (r *reader) byte() byte {
	if r.err != nil || r.i >= len(r.b) {
		r.err = errBlob
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || r.i+n > len(r.b) {
		r.err = errBlob
		return nil
	}
	r.i += n
	return r.b[r.i-n : r.i]
}

// fileTerm is the postings term of a file a doc's tool calls touched: a byte no word term
// has, then the 64-bit xxhash of the cleaned absolute path (a collision needs about 2^32
// distinct paths to become likely).
func fileTerm(p string) string {
	return "\x01" + strconv.FormatUint(xxhash.Sum64String(p), 16)
}

// segBuilder collects the docs of a new segment and their postings.
type segBuilder struct {
	docs  segDocs
	terms map[string][]posting
	tf    map[string]uint32 // scratch: one doc's term counts
}

func newSegBuilder() *segBuilder {
	return &segBuilder{terms: map[string][]posting{}, tf: map[string]uint32{}}
}

// add appends a doc whose terms are the space-separated body (fts.AppendTerms), and files.
func (sb *segBuilder) add(id, sess int64, d fts.Doc, body []byte, nterms int, files []string) {
	ord := uint32(sb.docs.add(id, sess, d.Seq, nanos(d.Time), d.Kind, d.Role, d.EntryID, uint32(nterms)))
	clear(sb.tf)
	for start := 0; start < len(body); {
		end := start
		for end < len(body) && body[end] != ' ' {
			end++
		}
		if end > start {
			sb.tf[string(body[start:end])]++
		}
		start = end + 1
	}
	for _, f := range files {
		sb.tf[fileTerm(f)] = 1
	}
	for t, n := range sb.tf {
		sb.terms[t] = append(sb.terms[t], posting{ord: ord, tf: n})
	}
}

// sortedTerms returns the builder's terms in order.
func (sb *segBuilder) sortedTerms() []string {
	out := make([]string, 0, len(sb.terms))
	for t := range sb.terms {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
