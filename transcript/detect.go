package transcript

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/tidwall/gjson"
)

// Detect recognizes a transcript's format from its first lines.
func Detect(path string) (Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return FormatAuto, fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	lr := newLineReader(io.LimitReader(f, 8<<20), 0)
	for i := 0; i < 50; i++ {
		line, _, tooLong, err := lr.next()
		if err != nil {
			break
		}
		line = bytes.TrimSpace(line)
		if tooLong || len(line) == 0 || !gjson.ValidBytes(line) {
			continue
		}
		if fm := detectLine(line, i == 0); fm != FormatAuto {
			return fm, nil
		}
	}
	return FormatAuto, fmt.Errorf("detect %s: %w", path, ErrUnknownFormat)
}

func detectLine(line []byte, first bool) Format {
	r := gjson.GetManyBytes(line, "type", "payload", "sessionId", "uuid", "cwd", "id", "message.role")
	typ := r[0].String()
	switch {
	case typ == nativeHeaderType:
		return FormatSessionmem
	case typ == "session" && (r[4].Exists() || r[5].Exists()):
		return FormatPi
	case r[1].Exists() && (typ == "session_meta" || typ == "response_item" || typ == "turn_context" ||
		typ == "event_msg" || typ == "compacted"):
		return FormatCodex
	case r[2].Exists() || (r[3].Exists() && (typ == "user" || typ == "assistant" || typ == "system")):
		return FormatClaudeCode
	case typ == "file-history-snapshot" || typ == "queue-operation" || typ == "summary" && gjson.GetBytes(line, "leafUuid").Exists():
		return FormatAuto // Claude Code, but keep looking for a line that says so for sure
	case first && typ == "" && r[5].Exists() && gjson.GetBytes(line, "instructions").Exists():
		return FormatCodex // rollouts from before the RolloutLine wrapper
	}
	return FormatAuto
}
