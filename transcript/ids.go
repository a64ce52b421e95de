package transcript

// Session and message ids of imported transcripts: derived from the source, so that importing
// the same transcript twice stores nothing new.

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
)

// sessionPrefixes are the session-id prefixes of imported transcripts, by format.
var sessionPrefixes = map[Format]string{FormatClaudeCode: "cc", FormatCodex: "codex", FormatPi: "pi"}

// sessionID derives the sessionmem session id of an imported transcript: prefix-id, or
// prefix-<hash> when the source's id is not usable as a sessionmem id.
func sessionID(prefix, id string) string {
	s := id
	if prefix != "" {
		s = prefix + "-" + id
	}
	if validID(s) {
		return s
	}
	return prefix + "-" + hashHex([]byte(id))[:32]
}

// sessionIDFromPath is the fallback when a file names no session: the file name's trailing
// UUID, else a hash of the absolute path.
func sessionIDFromPath(f Format, path string) string {
	prefix := sessionPrefixes[f]
	if prefix == "" {
		prefix = "import"
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if len(base) >= 36 && looksUUID(base[len(base)-36:]) {
		return sessionID(prefix, base[len(base)-36:])
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return prefix + "-" + hashHex([]byte(abs))[:32]
}

func looksUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// validID mirrors memory's id rule: 1-128 characters of A-Z a-z 0-9 _ . -, not "." or "..".
func validID(id string) bool {
	if id == "" || len(id) > 128 || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// messageID turns a source's key into a valid message id, hashing it when it is not one.
func messageID(key string) string {
	if validID(key) {
		return key
	}
	return "h." + hashHex([]byte(key))[:32]
}

func hashHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
