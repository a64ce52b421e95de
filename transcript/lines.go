package transcript

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// lineReader splits a stream into lines of any length up to MaxLineBytes, tracking offsets.
type lineReader struct {
	r   *bufio.Reader
	off int64 // offset just past the last returned line
	buf []byte
}

func newLineReader(r io.Reader, off int64) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 256<<10), off: off}
}

// next returns the next line without its newline. term says whether it ended in a newline;
// tooLong says it exceeded MaxLineBytes (its bytes are then dropped). io.EOF means no more
// bytes at all.
func (lr *lineReader) next() (line []byte, term, tooLong bool, err error) {
	lr.buf = lr.buf[:0]
	n := 0
	for {
		chunk, err := lr.r.ReadSlice('\n')
		n += len(chunk)
		if !tooLong {
			if len(lr.buf)+len(chunk) > maxLine {
				tooLong = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			lr.off += int64(n)
			return trimNL(lr.buf), true, tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if n == 0 {
				return nil, false, false, io.EOF
			}
			lr.off += int64(n)
			return lr.buf, false, tooLong, nil
		default:
			return nil, false, false, err
		}
	}
}

func trimNL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}
