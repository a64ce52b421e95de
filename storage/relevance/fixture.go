package relevance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionmem/sessionmem/internal/testpaths"
)

// FixturePath is where the fixture of conversations lives in the repository.
func FixturePath() string { return testpaths.Testdata("relevance", "sessions.jsonl.zst") }

// QuestionsPath is where the judged questions live in the repository.
func QuestionsPath() string { return testpaths.Testdata("relevance", "questions.jsonl") }

// Session is one conversation of the fixture.
type Session struct {
	// ID is the fixture's short session id (cc-8463c716, pi-ffae836b...).
	ID         string
	WorkingDir string
	Messages   []Message
}

// Message is one message of a session.
type Message struct {
	// ID is the message's client id, unique in the fixture; questions name messages by it.
	ID   string
	Role string
	// Time is when the message was written (the transcript's timestamp).
	Time time.Time
	// JSON is the contract message as stored in the fixture: id, role, content blocks.
	JSON json.RawMessage
}

// Record returns the message as memory stores it, without the sequence number the store
// adds: {"type":"message","id":ID,"ts":Time,"message":JSON}. The entry id is the message id,
// so what a search returns as an entry id is what the questions list as relevant.
func (m Message) Record() []byte {
	b := make([]byte, 0, len(m.JSON)+96)
	b = append(b, `{"type":"message","id":`...)
	b = appendJSONString(b, m.ID)
	b = append(b, `,"ts":`...)
	b = appendJSONString(b, m.Time.UTC().Format(time.RFC3339Nano))
	b = append(b, `,"message":`...)
	b = append(b, m.JSON...)
	return append(b, '}')
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// fixtureLine is one line of the fixture file.
type fixtureLine struct {
	Session    string          `json:"session"`
	WorkingDir string          `json:"working_dir"`
	Time       time.Time       `json:"time"`
	Message    json.RawMessage `json:"message"`
}

// LoadFixture reads the zstd-compressed fixture at path into sessions, in file order.
func LoadFixture(path string) ([]Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open relevance fixture: %w", err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("read relevance fixture %s: %w", path, err)
	}
	defer zr.Close()
	return readFixture(zr)
}

func readFixture(r io.Reader) ([]Session, error) {
	var out []Session
	index := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		var l fixtureLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("relevance fixture line %d: %w", n, err)
		}
		var head struct {
			ID   string `json:"id"`
			Role string `json:"role"`
		}
		if err := json.Unmarshal(l.Message, &head); err != nil || head.ID == "" || l.Session == "" {
			return nil, fmt.Errorf("relevance fixture line %d: want a session and a message with an id", n)
		}
		i, ok := index[l.Session]
		if !ok {
			i = len(out)
			index[l.Session] = i
			out = append(out, Session{ID: l.Session, WorkingDir: l.WorkingDir})
		}
		out[i].Messages = append(out[i].Messages, Message{
			ID: head.ID, Role: head.Role, Time: l.Time, JSON: bytes.Clone(l.Message)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read relevance fixture: %w", err)
	}
	return out, nil
}

// Question is one judged question.
type Question struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Question is asked as is, in natural language.
	Question string `json:"question"`
	// WorkingDir restricts the search to one project; empty means all of them.
	WorkingDir string `json:"working_dir,omitempty"`
	// Relevant are the ids of every message that answers the question.
	Relevant []string `json:"relevant"`
	// Note says what the answer is and why these messages.
	Note string `json:"note"`
}

// Kinds are the kinds of questions, in the order reports list them.
var Kinds = []string{"fact", "error_fix", "decision", "file_change", "cross_session", "time"}

// LoadQuestions reads the questions at path (JSON lines).
func LoadQuestions(path string) ([]Question, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read relevance questions: %w", err)
	}
	var out []Question
	for n, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var q Question
		if err := dec.Decode(&q); err != nil {
			return nil, fmt.Errorf("relevance questions line %d: %w", n+1, err)
		}
		out = append(out, q)
	}
	if len(out) == 0 {
		return nil, errors.New("relevance questions: the file holds none")
	}
	return out, nil
}
