package transport

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"
)

// Text that is not valid UTF-8 is refused, never stored changed. Go's JSON decoder (and so
// mcp-go) silently replaces invalid bytes and lone surrogate escapes with U+FFFD before a
// handler sees the arguments, so the check has to read the message as received: the
// transports (ServeStdio, WrapHTTP) pass every message through CheckUTF8, which turns a
// tools/call carrying such text into one with no arguments and a _meta marker naming the
// first bad field; the server answers it with a tool error (mcpserver's refuseInvalidUTF8). Nothing is written.

// MetaInvalidUTF8 is the _meta key of that marker.
const MetaInvalidUTF8 = "sessionmem/invalid-utf8"

// CheckUTF8 returns msg unchanged (and false) unless it is a tools/call whose arguments hold
// a string (or key) that is not valid UTF-8: raw bytes that are not UTF-8, or a \u escape of
// a lone surrogate. Then it returns the call rewritten as described above, and true.
func CheckUTF8(msg []byte) ([]byte, bool) {
	if utf8.Valid(msg) && !hasSurrogateEscape(msg) {
		return msg, false
	}
	if gjson.GetBytes(msg, "method").String() != string(mcp.MethodToolsCall) {
		return msg, false
	}
	args := gjson.GetBytes(msg, "params.arguments")
	path, ok := badString([]byte(args.Raw), "")
	if !ok {
		return msg, false // the bad text is elsewhere (a tool name, _meta): mcp-go's business
	}
	if path == "" {
		path = "arguments"
	}
	id := gjson.GetBytes(msg, "id")
	out := map[string]any{
		"jsonrpc": "2.0",
		"method":  string(mcp.MethodToolsCall),
		"params": map[string]any{
			"name":      strings.ToValidUTF8(gjson.GetBytes(msg, "params.name").String(), "\uFFFD"),
			"arguments": map[string]any{},
			"_meta":     map[string]any{MetaInvalidUTF8: path},
		},
	}
	if id.Exists() {
		out["id"] = json.RawMessage(strings.ToValidUTF8(id.Raw, "\uFFFD"))
	}
	b, err := json.Marshal(out)
	if err != nil {
		return msg, false
	}
	return b, true
}

// hasSurrogateEscape reports whether b holds a \u escape in the surrogate range D800-DFFF
// (valid only as a high-low pair, which badString checks).
// It jumps from backslash to backslash (bytes.IndexByte, vectorized) instead of testing every
// byte: it runs over every message read.
func hasSurrogateEscape(b []byte) bool {
	for i := 0; ; i++ {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return false
		}
		i += j
		if i+5 >= len(b) {
			return false
		}
		if b[i+1] == 'u' && (b[i+2]|0x20) == 'd' && strings.IndexByte("89abcdefABCDEF", b[i+3]) >= 0 {
			return true
		}
	}
}

// badString finds the first string or key in the JSON value b that is not valid UTF-8 and
// returns its path ("messages[0].content[1].text"; a key is named as "<path> (a key)").
func badString(b []byte, path string) (string, bool) {
	var p jsonScan
	p.b = b
	return p.value(path)
}

type jsonScan struct {
	b []byte
	i int
}

func (p *jsonScan) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// value scans one value; a structural error ends the scan (mcp-go reports those).
func (p *jsonScan) value(path string) (string, bool) {
	p.ws()
	if p.i >= len(p.b) {
		return "", false
	}
	switch p.b[p.i] {
	case '{':
		p.i++
		for {
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] == '}' {
				p.i++
				return "", false
			}
			if p.b[p.i] == ',' {
				p.i++
				continue
			}
			if p.b[p.i] != '"' {
				return "", false
			}
			key, ok := p.str()
			name := key
			if !ok {
				name = strings.ToValidUTF8(key, "\uFFFD")
				if path == "" {
					return name + " (a key)", true
				}
				return path + "." + name + " (a key)", true
			}
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return "", false
			}
			p.i++
			sub := name
			if path != "" {
				sub = path + "." + name
			}
			if bad, found := p.value(sub); found {
				return bad, true
			}
		}
	case '[':
		p.i++
		for n := 0; ; {
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] == ']' {
				p.i++
				return "", false
			}
			if p.b[p.i] == ',' {
				p.i++
				n++
				continue
			}
			if bad, found := p.value(path + "[" + strconv.Itoa(n) + "]"); found {
				return bad, true
			}
		}
	case '"':
		if _, ok := p.str(); !ok {
			return path, true
		}
		return "", false
	default:
		for p.i < len(p.b) && strings.IndexByte(",]} \t\r\n", p.b[p.i]) < 0 {
			p.i++
		}
		return "", false
	}
}

// str scans a string starting at its quote and returns its raw text and whether it is valid.
func (p *jsonScan) str() (string, bool) {
	start := p.i + 1
	ok := true
	i := start
	for i < len(p.b) && p.b[i] != '"' {
		if p.b[i] != '\\' {
			r, n := utf8.DecodeRune(p.b[i:])
			if r == utf8.RuneError && n <= 1 {
				ok = false
			}
			i += max(n, 1)
			continue
		}
		if i+1 < len(p.b) && p.b[i+1] == 'u' && i+5 < len(p.b) {
			v, err := strconv.ParseUint(string(p.b[i+2:i+6]), 16, 32)
			if err == nil && v >= 0xD800 && v <= 0xDFFF {
				low := i+11 < len(p.b) && p.b[i+6] == '\\' && p.b[i+7] == 'u'
				if low {
					w, err := strconv.ParseUint(string(p.b[i+8:i+12]), 16, 32)
					low = err == nil && w >= 0xDC00 && w <= 0xDFFF
				}
				if v >= 0xDC00 || !low {
					ok = false
				} else {
					i += 6 // the pair's low half
				}
			}
			i += 6
			continue
		}
		i += 2
	}
	p.i = i + 1
	return string(p.b[start:min(i, len(p.b))]), ok
}
