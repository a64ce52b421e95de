package local

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"github.com/cespare/xxhash/v2"

	"github.com/sessionmem/sessionmem/storage"
)

var _ storage.Snapshots = (*Store)(nil)

// State snapshots (storage.Snapshots) live beside the session as <id>.state:
//
//	magic (8 bytes) | uvarint len(gen) | gen | zstd frame of the data | xxhash64 of all before (8 bytes, little endian)
//
// The file is a cache: it is written without any fsync, read without trusting it (a
// bad checksum, another generation or a decode error is "no snapshot"), and removed by
// Delete and Rewrite under the session's write lock. SaveSnapshot holds the session's read
// lock while it checks the generation and renames the file into place, so a rewrite can never
// slip between the check and the rename and leave a snapshot of the old content behind.
const (
	stateSuffix = ".state"
	stateMagic  = "SMSTATE1"
)

func (s *Store) statePath(id string) string { return filepath.Join(s.sessDir, id+stateSuffix) }

// generation is the .zst's inode (which a rewrite's rename replaces, and a new session's
// first append's, and other appends and seals keep) and the header's nonce (which a
// re-created session changes).
func generation(zid fileID, nonce string) string {
	return strconv.FormatUint(zid.ino, 36) + "." + nonce
}

// Generation implements storage.Snapshots.
func (s *Store) Generation(r storage.Reader) string {
	lr := localReader(r)
	if lr == nil {
		return ""
	}
	return generation(lr.zid, lr.v.hdr.Nonce)
}

func localReader(r storage.Reader) *Reader {
	switch x := r.(type) {
	case *Reader:
		return x
	case *Writer:
		return &x.Reader
	}
	return nil
}

// LoadSnapshot implements storage.Snapshots.
func (s *Store) LoadSnapshot(r storage.Reader) []byte {
	lr := localReader(r)
	if lr == nil {
		return nil
	}
	b, err := readFile(s.fs, s.statePath(lr.id))
	if err != nil {
		return nil
	}
	gen, payload, ok := parseState(b)
	if !ok || gen != generation(lr.zid, lr.v.hdr.Nonce) {
		return nil
	}
	data, err := s.dec.DecodeAll(payload, nil)
	if err != nil {
		return nil
	}
	return data
}

// parseState splits a .state file into its generation and compressed data, checking the
// magic and the checksum.
func parseState(b []byte) (gen string, payload []byte, ok bool) {
	if len(b) < len(stateMagic)+1+8 || string(b[:len(stateMagic)]) != stateMagic {
		return "", nil, false
	}
	body, sum := b[:len(b)-8], binary.LittleEndian.Uint64(b[len(b)-8:])
	if xxhash.Sum64(body) != sum {
		return "", nil, false
	}
	rest := body[len(stateMagic):]
	n, w := binary.Uvarint(rest)
	if w <= 0 || n > uint64(len(rest)-w) {
		return "", nil, false
	}
	return string(rest[w : w+int(n)]), rest[w+int(n):], true
}

// SaveSnapshot implements storage.Snapshots. It runs as a View (the session's read lock
// held, the header read through the cached view), so the generation it compares is the one on
// disk until the rename is done.
func (s *Store) SaveSnapshot(ctx context.Context, id, gen string, data []byte) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	err := s.view(ctx, id, func(r *Reader) error {
		if generation(r.zid, r.v.hdr.Nonce) != gen {
			return nil // rewritten, or deleted and created again: data describes old content
		}
		var b bytes.Buffer
		b.WriteString(stateMagic)
		b.Write(binary.AppendUvarint(nil, uint64(len(gen))))
		b.WriteString(gen)
		out := s.enc.EncodeAll(data, b.Bytes())
		out = binary.LittleEndian.AppendUint64(out, xxhash.Sum64(out))
		return writeFileAtomic(s.fs, s.sessDir, id+stateSuffix, out, durableNone)
	})
	if errors.Is(err, storage.ErrNotFound) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return fmt.Errorf("snapshot session %s: %w", id, err)
	}
	return nil
}

// removeSnapshot drops id's snapshot; the caller holds the session's write lock.
func (s *Store) removeSnapshot(id string) error {
	if err := s.fs.Remove(s.statePath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove snapshot of session %s: %w", id, err)
	}
	return nil
}
