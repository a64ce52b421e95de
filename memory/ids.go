package memory

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// newSessionID returns a UUID version 7: time-ordered, so ids sort roughly by creation, and
// random enough that two processes never collide.
func newSessionID(now time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[6:])
	ms := uint64(now.UnixMilli())
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// newEntryID returns 8 random hex characters. The caller retries on the rare collision with an
// id already in the session.
func newEntryID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// encodeToken turns a small struct into an opaque URL-safe token (cursors, compaction ids).
func encodeToken(prefix string, v any) string {
	b, _ := json.Marshal(v)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// decodeToken reverses encodeToken; a wrong prefix or bad encoding is an error.
func decodeToken(prefix, tok string, v any) error {
	if len(tok) <= len(prefix) || tok[:len(prefix)] != prefix {
		return fmt.Errorf("not a %s token", prefix)
	}
	b, err := base64.RawURLEncoding.DecodeString(tok[len(prefix):])
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
