package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/fileops"
	"github.com/sessionmem/sessionmem/prompts"
	"github.com/sessionmem/sessionmem/storage"
)

// Summarizer names accepted by session_compact.
const (
	SummarizerAuto       = "auto"
	SummarizerAgent      = "agent"
	SummarizerSampling   = "sampling"
	SummarizerLLM        = "llm"
	SummarizerExtractive = "extractive"
	// SummarizerImport marks summaries another agent wrote, brought in by an import.
	SummarizerImport = "import"
)

// agentConversationTokens bounds the conversation a needs_summary response carries, so the
// whole response stays under the 20,000-token cap clients enforce.
const agentConversationTokens = 14000

type compactionToken struct {
	Session string `json:"s"`
	LastSeq uint64 `json:"q"`
	Kept    string `json:"k"`
	Keep    int    `json:"t,omitempty"` // keep_recent_tokens of step one, so step two cuts alike
}

// plan is a compaction worked out from the current path, before any summary exists.
type plan struct {
	path          *sessionPath
	entries       []compaction.Entry
	cut           compaction.Cut
	req           compaction.Request // req.Ledger and req.MaxSummaryTokens set
	firstKeptID   string
	tokensBefore  int
	read, modifed []string
	ledger        compaction.Ledger // what the compaction stores, fitted to its budget
	omittedFiles  int               // paths the summary text leaves out of its file blocks
}

// Compact compacts a session: it folds everything older than keep_recent_tokens into a summary,
// written by the caller (two-step agent flow), by MCP sampling, by a configured LLM, or by the
// extractive summarizer.
func (s *Service) Compact(ctx context.Context, req CompactRequest) (CompactResult, error) {
	if err := s.checkCompact(req); err != nil {
		return CompactResult{}, err
	}
	progress := func(done float64, msg string) {
		if req.Progress != nil {
			req.Progress(done, 4, msg)
		}
	}
	var tok compactionToken
	if req.CompactionID != "" {
		if err := decodeToken("c1.", req.CompactionID, &tok); err != nil || tok.Session == "" {
			return CompactResult{}, invalidf("pass compaction_id exactly as the needs_summary response gave it", "compaction_id is not one this server issued")
		}
		if tok.Session != req.SessionID {
			return CompactResult{}, stalef("use the compaction_id with the session it came from", "compaction_id belongs to session %s", tok.Session)
		}
		req.KeepRecentTokens = tok.Keep
	}
	progress(0, "reading session")
	pl, err := s.plan(ctx, req)
	if err != nil {
		return CompactResult{}, err
	}
	if pl == nil && req.CompactionID != "" {
		return CompactResult{}, stalef("call session_compact again without summary to get a fresh compaction_id and conversation",
			"compaction_id is stale: session %s changed after it was issued", req.SessionID)
	}
	if pl == nil {
		p, err := s.readPath(ctx, req.SessionID, false)
		if err != nil {
			return CompactResult{}, err
		}
		return CompactResult{Status: StatusNothingToCompact, ContextTokens: p.contextTokens()}, nil
	}
	if req.CompactionID != "" {
		if tok.LastSeq != pl.path.lastSeq || tok.Kept != pl.firstKeptID {
			return CompactResult{}, stalef("call session_compact again without summary to get a fresh compaction_id and conversation",
				"compaction_id is stale: session %s changed after it was issued", req.SessionID)
		}
		text, err := agentSummary(s.redact(req.Summary), pl)
		if err != nil {
			return CompactResult{}, err
		}
		return s.commitCompaction(ctx, pl, text, SummarizerAgent, progress)
	}
	sum := s.summarizer(req)
	if sum == nil { // the agent writes it: step one of the two-step flow
		return s.needsSummary(pl, req.KeepRecentTokens), nil
	}
	progress(1, "summarizing with "+sum.Name())
	text, err := runSummarizer(ctx, sum, pl, s.redact)
	if err != nil {
		return CompactResult{}, err
	}
	progress(3, "storing the compaction")
	return s.commitCompaction(ctx, pl, text, sum.Name(), progress)
}

// checkCompact refuses a compact request that is malformed or asks for a summarizer this
// server or client does not have.
func (s *Service) checkCompact(req CompactRequest) error {
	if err := checkSessionID("session_id", req.SessionID); err != nil {
		return err
	}
	if req.KeepRecentTokens < 0 {
		return invalidf("pass keep_recent_tokens as a positive number of tokens, or omit it for 20000", "keep_recent_tokens is negative")
	}
	name := req.Summarizer
	switch name {
	case "", SummarizerAuto, SummarizerAgent, SummarizerSampling, SummarizerLLM, SummarizerExtractive:
	default:
		return invalidf(`use one of "auto", "agent", "sampling", "llm", "extractive"`, "unknown summarizer %q", clip(name, 40))
	}
	if req.Summary != "" && req.CompactionID == "" {
		return invalidf("call session_compact without summary first; it returns a compaction_id to send back with the summary",
			"summary given without compaction_id")
	}
	if req.CompactionID != "" && req.Summary == "" {
		return invalidf("send the summary you wrote together with compaction_id", "compaction_id given without summary")
	}
	if name == SummarizerSampling && req.Sampler == nil && req.Summary == "" {
		return &Error{Kind: ErrUnavailable, Msg: "this client did not declare MCP sampling",
			Hint: `use summarizer "agent" (you write the summary) or "extractive" (no model)`}
	}
	if name == SummarizerLLM && s.opts.LLM == nil && req.Summary == "" {
		return &Error{Kind: ErrUnavailable, Msg: "no LLM summarizer is configured",
			Hint: `set SESSIONMEM_LLM_URL and SESSIONMEM_LLM_MODEL (and SESSIONMEM_LLM_API_KEY) for the server, or use summarizer "agent" or "extractive"`}
	}
	return nil
}

// agentSummary checks the summary an agent wrote (redacted) against the plan's budget.
func agentSummary(summary string, pl *plan) (string, error) {
	text := fileops.CleanSummary(summaryText(summary))
	if text == "" {
		return "", invalidf("write the summary text", "summary is empty")
	}
	if n, limit := compaction.EstimateText(text), pl.req.MaxSummaryTokens; n > limit {
		return "", invalidf(fmt.Sprintf("shorten it to at most %d tokens (about %d characters) and send it again with the same compaction_id; "+
			"the file lists and recorded facts the server appends take the rest of the summary's %d-token budget", limit, 4*limit, compaction.SummaryBudgetTokens),
			"summary is about %d tokens, over its limit of %d", n, limit)
	}
	return text, nil
}

// summarizer returns the summarizer a request asks for, nil when the agent writes the summary.
func (s *Service) summarizer(req CompactRequest) compaction.Summarizer {
	var sum compaction.Summarizer
	switch req.Summarizer {
	case "", SummarizerAuto:
		switch {
		case req.Sampler != nil:
			sum = req.Sampler
		case s.opts.LLM != nil:
			sum = s.opts.LLM
		}
	case SummarizerSampling:
		sum = req.Sampler
	case SummarizerLLM:
		sum = s.opts.LLM
	case SummarizerExtractive:
		sum = compaction.Extractive{}
	}
	return sum
}

// runSummarizer has sum summarize the plan's conversation and returns the text, redacted and
// within the summary's bound; failures are said as the caller can act on them.
func runSummarizer(ctx context.Context, sum compaction.Summarizer, pl *plan, redact func(string) string) (string, error) {
	text, err := compaction.Run(ctx, sum, pl.req)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return "", &Error{Kind: ErrUnavailable, Msg: fmt.Sprintf("the %s summarizer did not answer in time", sum.Name()),
				Hint: `try again, or use summarizer "agent" or "extractive"`}
		}
		// compaction.Run names the summarizer too ("sampling summarizer: …"): once is enough.
		why := strings.TrimPrefix(err.Error(), sum.Name()+" summarizer: ")
		return "", &Error{Kind: ErrUnavailable, Msg: fmt.Sprintf("the %s summarizer failed: %s", sum.Name(), why),
			Hint: `try again, or use summarizer "agent" or "extractive"`}
	}
	text = fileops.CleanSummary(summaryText(redact(text)))
	if text == "" {
		return "", &Error{Kind: ErrUnavailable, Msg: fmt.Sprintf("the %s summarizer returned an empty summary", sum.Name()),
			Hint: `try again, or use summarizer "agent" or "extractive"`}
	}
	// A model may write more than it was asked for; the stored summary keeps its bound.
	text = compaction.FitProse(text, pl.req.MaxSummaryTokens)
	return text, nil
}

// plan reads the path and works out the cut, the summarizer request and the cumulative file
// lists. It returns nil when there is nothing older than the kept part to fold in.
func (s *Service) plan(ctx context.Context, req CompactRequest) (*plan, error) {
	p, err := s.readPath(ctx, req.SessionID, false)
	if err != nil {
		return nil, err
	}
	entries := compactionEntries(p.entries)
	prev := -1
	var prevComp *Compaction
	if p.comp >= 0 {
		prevComp = p.entries[p.comp].Compaction
		if prevComp.FirstKeptID != "" {
			prev = 0
		}
	}
	// One accounting: the kept part is measured in the calibrated tokens context_tokens and
	// should_compact use, so a session told to compact always has something to fold.
	factor := p.calibration()
	keep := p.keepRecentTokens(req.KeepRecentTokens, factor)
	cut, ok := compaction.FindCutWeighted(entries, compaction.CalibratedWeights(entries, factor), keep, prev)
	if !ok {
		return nil, nil
	}
	var sets fileops.Sets
	if prevComp != nil {
		sets.AddLists(prevComp.ReadFiles, prevComp.ModifiedFiles)
	}
	for _, e := range p.entries[cut.Start:cut.FirstKept] {
		if e.Type == KindMessage {
			sets.Add(s.files.Message(e.raw, p.header.WorkingDir)...)
		}
	}
	read, modified := sets.Lists()
	cr := compaction.Request{
		Instructions:  s.redact(req.Instructions),
		ReadFiles:     read,
		ModifiedFiles: modified,
	}
	var prevLedger *compaction.Ledger
	if prevComp != nil {
		cr.PreviousSummary = summaryText(prevComp.Summary)
		prevLedger = prevComp.Facts
		if l, ok := compaction.LedgerFromSummary(prevComp.Summary); ok && prevLedger == nil {
			prevLedger = &l // stored before the ledger was kept apart, or imported
		}
	}
	// The ledger takes this window's facts; the prose gets what the ledger and the file lists
	// leave of the summary's budget.
	ledger := compaction.UpdateLedger(prevLedger, p.foldable(entries, cut.Start, cut.FirstKept), p.header.WorkingDir)
	ledger.Fit(compaction.LedgerMaxTokens)
	blocks, omitted := fileops.AppendTagsWithin("", read, modified, 4*compaction.FileBlocksMaxTokens)
	cr.Ledger = &ledger
	cr.MaxSummaryTokens = compaction.ProseBudget(blocks, ledger.Render())
	if omitted > 0 {
		cr.MaxSummaryTokens -= compaction.EstimateText(omittedNote(omitted))
	}
	histEnd := cut.FirstKept
	if cut.SplitTurn {
		histEnd = cut.TurnStart
		cr.TurnPrefix = p.foldable(entries, cut.TurnStart, cut.FirstKept)
	}
	cr.History = p.foldable(entries, cut.Start, histEnd)
	if !holdsConversation(cr.History) && !holdsConversation(cr.TurnPrefix) {
		// Only pinned messages (which stay verbatim) and metadata lie before the kept part: a
		// summary would retell nothing and only add its own size to the context.
		return nil, nil
	}
	pl := &plan{path: p, entries: entries, cut: cut, req: cr, tokensBefore: p.contextTokens(), read: read, modifed: modified,
		ledger: ledger, omittedFiles: omitted}
	if cut.FirstKept < len(p.entries) {
		pl.firstKeptID = p.entries[cut.FirstKept].ID
	}
	return pl, nil
}

// holdsConversation reports whether entries hold something a summary retells: a message or
// a branch summary, not only renames, labels and model changes.
func holdsConversation(entries []compaction.Entry) bool {
	for _, e := range entries {
		if e.Kind == compaction.KindMessage || e.Kind == compaction.KindBranchSummary {
			return true
		}
	}
	return false
}

// foldable returns entries[from:to] that a summary folds in: no compactions, and no pinned
// messages, which stay verbatim (resume returns them in pinned) and so are neither retold by
// the summary nor copied into the ledger. entries correspond to p.entries one to one.
func (p *sessionPath) foldable(entries []compaction.Entry, from, to int) []compaction.Entry {
	out := make([]compaction.Entry, 0, to-from)
	for i := from; i < to; i++ {
		e := p.entries[i]
		if e.Type == KindCompaction || (e.Message != nil && e.Message.Pinned) {
			continue
		}
		out = append(out, entries[i])
	}
	return out
}

// calibration is how many context tokens one estimated token of this path is worth: the
// session's context_tokens (calibrated from reported usage) over its character estimate, but
// never less than 1. Usage below the character estimate is more often usage that leaves
// something out (input_tokens without the cached part, a client's own numbers) than text
// that tokenizes that well; counting fewer tokens than the characters suggest would keep
// everything and answer nothing_to_compact to an explicit request. At 1 the cut counts at
// least what context_tokens reports, so a session that should_compact can still be compacted.
func (p *sessionPath) calibration() float64 {
	if p.est <= 0 || p.ctxTokens <= p.est {
		return 1
	}
	return float64(p.ctxTokens) / float64(p.est)
}

// keepRecentTokens is the kept part compaction aims at, in context tokens: the request's (or
// the default), and, when the session's context window is known, at most what leaves the
// kept part, a full-size summary and the pinned messages under the should_compact threshold,
// so that a compaction answers should_compact. A window too small for that still keeps a
// quarter of the threshold.
func (p *sessionPath) keepRecentTokens(keep int, factor float64) int {
	if keep <= 0 {
		keep = compaction.DefaultKeepRecentTokens
	}
	if p.window <= 0 {
		return keep
	}
	threshold := compaction.CompactThreshold(p.window)
	fixed := int(math.Ceil(factor * float64(compaction.SummaryBudgetTokens+p.pinTok)))
	limit := max(threshold-fixed, threshold/4, 1)
	return min(keep, limit)
}

// needsSummary is step one of the agent flow: everything the caller needs to write the summary,
// bounded so the response fits a client's tool-output cap. The prompt refers to the
// conversation and previous_summary fields instead of repeating them.
func (s *Service) needsSummary(pl *plan, keep int) CompactResult {
	req := pl.req
	req.MaxInputTokens = agentConversationTokens
	p := compaction.BuildPrompt(req)
	return CompactResult{
		Status:          StatusNeedsSummary,
		CompactionID:    encodeToken("c1.", compactionToken{Session: pl.path.header.ID, LastSeq: pl.path.lastSeq, Kept: pl.firstKeptID, Keep: keep}),
		Prompt:          agentPrompt(req),
		Conversation:    p.Conversation,
		PreviousSummary: req.PreviousSummary,
		ReadFiles:       nonNil(pl.read),
		ModifiedFiles:   nonNil(pl.modifed),
		Facts:           &pl.ledger,
	}
}

// omittedNote ends the prose when the file blocks in the text leave paths out.
func omittedNote(n int) string {
	return fmt.Sprintf("(The file lists below leave out %d paths to keep the summary short; read_files and modified_files list them all.)", n)
}

// agentPrompt is the instruction text for an agent writing the summary itself.
func agentPrompt(req compaction.Request) string {
	const conv = "(the conversation field of this response)"
	var body string
	var err error
	if req.PreviousSummary != "" {
		body, err = prompts.Update(conv, "(the previous_summary field of this response)", req.Instructions)
	} else {
		body, err = prompts.Summary(conv, req.Instructions)
	}
	if err != nil {
		body = "Summarize the conversation field of this response as a structured context checkpoint."
	}
	recorded := ""
	if !req.Ledger.Empty() {
		recorded = "(the facts field of this response)"
	}
	return prompts.System() + "\n\n" + body + "\n\n" + prompts.Facts(recorded, req.MaxSummaryTokens) +
		"\n\nThen call session_compact again with the same session_id, this compaction_id and your summary. " +
		"Do not list files: the server appends the read and modified file lists itself."
}

// commitCompaction appends the compaction entry, provided the session did not move since the
// plan was made in a way that invalidates it.
func (s *Service) commitCompaction(ctx context.Context, pl *plan, text, summarizer string, progress func(float64, string)) (CompactResult, error) {
	id := pl.path.header.ID
	if pl.omittedFiles > 0 {
		text += "\n\n" + omittedNote(pl.omittedFiles)
	}
	withFiles, _ := fileops.AppendTagsWithin(text, pl.read, pl.modifed, 4*compaction.FileBlocksMaxTokens)
	// The result shows the summary exactly as the gate stores it.
	summary := s.redact(compaction.AppendLedger(withFiles, &pl.ledger))
	var res CompactResult
	err := s.update(ctx, id, func(w storage.Writer) error {
		st, err := s.current(id, w)
		if err != nil {
			return err
		}
		defer st.mu.Unlock()
		if st.lastSeq != pl.path.lastSeq {
			// The session grew while the summary was written. The compaction still holds if the
			// kept entry is on the new leaf's path and nobody compacted meanwhile.
			if !st.onPath(st.leaf, pl.firstKeptID) || st.compactionsSince(pl.path.lastSeq) {
				return stalef("call session_compact again", "session %s changed while the summary was being written", id)
			}
		}
		c := &Compaction{Summary: summary, FirstKeptID: pl.firstKeptID, TokensBefore: pl.tokensBefore,
			ReadFiles: nonNil(pl.read), ModifiedFiles: nonNil(pl.modifed), Summarizer: summarizer, Facts: &pl.ledger}
		b := newBatch(st, st.leaf, s.now())
		b.barrier = true
		b.add(Entry{Type: KindCompaction, Compaction: c})
		// tokens_after is the context a client resumes with, as context_tokens will report it:
		// the new summary, the pinned messages before the kept part and what it keeps.
		first := int32(-1)
		if k, ok := st.ids[pl.firstKeptID]; ok && pl.firstKeptID != "" {
			first = k
		}
		c.TokensAfter = st.compactionContext(st.leafIdx, first, estimateText(summary))
		if err := s.commit(w, st, b, s.now()); err != nil {
			return err
		}
		res = CompactResult{Status: StatusCompacted, Summary: summary, TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter,
			FirstKeptID: c.FirstKeptID, ReadFiles: c.ReadFiles, ModifiedFiles: c.ModifiedFiles, Summarizer: summarizer, Facts: c.Facts}
		return nil
	})
	if err != nil {
		return CompactResult{}, mapStoreErr(id, err)
	}
	progress(4, "compacted")
	return res, nil
}

// onPath reports whether id is leaf or one of its ancestors.
func (st *state) onPath(leaf, id string) bool {
	if id == "" {
		return true
	}
	l, ok1 := st.ids[leaf]
	k, ok2 := st.ids[id]
	return ok1 && ok2 && st.onPathIdx(l, k)
}

// compactionsSince reports whether a compaction was stored after seq.
func (st *state) compactionsSince(seq uint64) bool {
	for i := int(seq); i < len(st.nodes); i++ {
		if st.nodes[i].kind == KindCompaction {
			return true
		}
	}
	return false
}
