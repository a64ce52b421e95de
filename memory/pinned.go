package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/sessionmem/sessionmem/message"
	"github.com/sessionmem/sessionmem/storage"
)

// MaxPinnedTokens bounds what all pinned messages of a session may hold together (contract
// v2), in the contract's estimate: the characters of the JSON session_resume returns for them,
// divided by 4. It keeps the standing context every resume carries well inside a page.
const MaxPinnedTokens = 8000

// pinCost is what a stored pinned message (its JSON as stored, entry id apart) weighs against
// MaxPinnedTokens: its output JSON, entry_id included, in characters / 4 rounded up.
func pinCost(raw []byte, entryID string) int {
	return (outputChars(raw, entryID) + 3) / 4
}

// pinnedTokensBefore is the context tokens of the pinned messages a compaction appended under
// parent and keeping the path from firstKept on (-1: nothing) leaves out of its kept part:
// those on the path before firstKept, or up to parent when it keeps nothing.
func (st *state) pinnedTokensBefore(parent, firstKept int32) int {
	if firstKept >= 0 {
		f := &st.nodes[firstKept]
		if f.pinned {
			return f.pinTok - f.tokens
		}
		return f.pinTok
	}
	if parent >= 0 {
		return st.nodes[parent].pinTok
	}
	return 0
}

// pinnedChain returns the pinned messages on the path from the root to entry i (i included),
// oldest first, walking only the pinned ones. i -1 gives none.
func (st *state) pinnedChain(i int32) []int32 {
	var out []int32
	if i >= 0 {
		i = st.nodes[i].pin
	}
	for i >= 0 {
		out = append(out, i)
		p := st.nodes[i].parent
		if p < 0 {
			break
		}
		i = st.nodes[p].pin
	}
	slices.Reverse(out)
	return out
}

// pinnedBeforeKept returns the pinned messages session_resume returns in pinned for a path
// whose newest compaction is comp (-1: none): those before its first kept entry, or before
// the compaction itself when it keeps nothing. Without a compaction every pinned message is
// among the messages, so there are none.
func (st *state) pinnedBeforeKept(comp int32) []int32 {
	if comp < 0 {
		return nil
	}
	c := &st.nodes[comp]
	if c.firstKept >= 0 {
		return st.pinnedChain(st.nodes[c.firstKept].parent)
	}
	return st.pinnedChain(c.parent)
}

// checkPinned refuses a batch whose pinned messages would take the session's pinned messages
// over MaxPinnedTokens. It measures each message as the gate will store it, so the figure is
// the one the state keeps once the batch is applied. The caller holds st.mu.
func (s *Service) checkPinned(st *state, b *batch) error {
	added, n := 0, 0
	for _, e := range b.entries {
		if e.Type != KindMessage || !e.Message.Pinned {
			continue
		}
		m, err := s.gateMessage(gateSalt(st.header), *e.Message)
		if err != nil {
			return err
		}
		raw, err := message.MarshalNoEscape(m)
		if err != nil {
			return err
		}
		added += pinCost(raw, e.ID)
		n++
	}
	if n == 0 || st.pinnedCost+added <= MaxPinnedTokens {
		return nil
	}
	return pinnedCapError(st.pinnedCost, added, n)
}

func pinnedCapError(have, added, n int) *Error {
	return invalidf(fmt.Sprintf("pin only standing context (the task, the project's instructions) and keep all pinned messages of a session under %d tokens "+
		"(about %d characters of JSON); send the rest without \"pinned\"", MaxPinnedTokens, 4*MaxPinnedTokens),
		"pinned messages would hold about %d tokens, over the limit of %d (the session's pinned messages hold %d, the %d pinned in this call %d)",
		have+added, MaxPinnedTokens, have, n, added)
}

// preCheckPinned is checkPinned for a session not yet created: a call that creates a session
// and pins too much must not leave an empty session behind.
func (s *Service) preCheckPinned(msgs []Message) error {
	added, n := 0, 0
	for _, m := range msgs {
		if !m.Pinned {
			continue
		}
		g, err := s.gateMessage("", m)
		if err != nil {
			return err
		}
		raw, err := message.MarshalNoEscape(g)
		if err != nil {
			return err
		}
		added += pinCost(raw, "00000000") // new entry ids are 8 characters
		n++
	}
	if added > MaxPinnedTokens {
		return pinnedCapError(0, added, n)
	}
	return nil
}

// Pinned returns every pinned message on a session's current path, oldest first, whether a
// compaction's kept part holds it or not: the standing context a client starting over (a
// SessionStart hook) should see. It reads only the pinned messages.
func (s *Service) Pinned(ctx context.Context, sessionID string) ([]Message, error) {
	if err := checkSessionID("session_id", sessionID); err != nil {
		return nil, err
	}
	var out []Message
	err := s.store.View(ctx, sessionID, func(r storage.Reader) error {
		st, err := s.current(sessionID, r)
		if err != nil {
			return err
		}
		idx := st.pinnedChain(st.leafIdx)
		nodes := st.nodes[:len(st.nodes):len(st.nodes)]
		st.mu.Unlock()
		out, err = readPinned(r, nodes, idx)
		return err
	})
	if err != nil {
		return nil, mapStoreErr(sessionID, err)
	}
	return out, nil
}

// readPinned decodes the messages idx names (ascending indexes into nodes).
func readPinned(r storage.Reader, nodes []node, idx []int32) ([]Message, error) {
	out := make([]Message, 0, len(idx))
	if len(idx) == 0 {
		return out, nil
	}
	v := &pathView{nodes: nodes, leaf: idx[len(idx)-1], idx: idx}
	err := v.each(r, 0, func(_ int, rec storage.Record) (bool, error) {
		e, err := readEntry(rec)
		if err != nil {
			return false, err
		}
		if m, ok := outputMessage(e); ok {
			out = append(out, m)
		}
		return true, nil
	})
	return out, err
}

// addPinned puts the pinned messages on a first page whose JSON so far takes used characters
// of budget, and returns the characters used then. They fit whole unless max_tokens is small
// (8,000 pinned tokens fit a default page beside a full header): then the last that fits is cut
// and says how many more were left out, so a response never exceeds max_tokens.
func addPinned(res *ResumeResult, pinned []Message, used, budget int) int {
	const minChars = 400 // the least fitMessage cuts a message to
	for i, m := range pinned {
		size := jsonChars(m) + 1
		if used+size <= budget {
			res.Pinned = append(res.Pinned, m)
			used += size
			continue
		}
		left := len(pinned) - i - 1
		note := Block{Type: BlockText, Text: fmt.Sprintf("[… %d more pinned messages not shown: call session_resume with a larger max_tokens]", left)}
		room := budget - used - 1
		if left > 0 {
			room -= jsonChars(note) + 1
		}
		if room < minChars {
			if n := len(res.Pinned); n > 0 {
				last := &res.Pinned[n-1]
				used -= jsonChars(*last) + 1
				*last = withNote(fitMessage(*last, jsonChars(*last)-jsonChars(note)-1), note, left+1)
				used += jsonChars(*last) + 1
			}
			return used
		}
		m = fitMessage(m, room)
		if left > 0 {
			m = withNote(m, note, left)
		}
		res.Pinned = append(res.Pinned, m)
		return used + jsonChars(m) + 1
	}
	return used
}

// withNote appends a note saying n more pinned messages were left out.
func withNote(m Message, note Block, n int) Message {
	note.Text = fmt.Sprintf("[… %d more pinned messages not shown: call session_resume with a larger max_tokens]", n)
	m.Content = append(append([]Block(nil), m.Content...), note)
	return m
}
