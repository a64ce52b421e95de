package compaction

import (
	"fmt"
	"strings"

	"github.com/sessionmem/sessionmem/prompts"
)

// BuildPrompt renders req with the templates in prompts/ (first summary, update, split turn).
//
// A request with a turn prefix but no history gets the split-turn template (what Run sends for
// the prefix half). Otherwise history and turn prefix form one conversation, summarized with
// the update template when PreviousSummary is set and the first-summary template when not. The
// conversation sits in <conversation> tags, the previous summary in <previous-summary>, and
// Instructions follow as "Additional focus". Last comes the note of prompts.Facts: the ledger
// (req.Ledger, in <recorded-facts>), which the model is told not to repeat, and the size limit
// (req.MaxSummaryTokens, at most SummaryMaxTokens, or TurnPrefixMaxTokens for a turn prefix),
// which is also Prompt.MaxTokens. With MaxInputTokens set, the oldest messages are left out,
// with a note saying so, until system and user message fit.
func BuildPrompt(req Request) Prompt {
	prefixOnly := turnPrefixOnly(req)
	entries := req.History
	if prefixOnly {
		entries = req.TurnPrefix
	} else if len(req.TurnPrefix) > 0 {
		entries = append(append(make([]Entry, 0, len(req.History)+len(req.TurnPrefix)), req.History...), req.TurnPrefix...)
	}
	previous := ""
	if !prefixOnly {
		previous = escapeTags(strings.TrimSpace(StripFileTags(req.PreviousSummary)))
	}
	focus := strings.TrimSpace(req.Instructions)
	limit := SummaryMaxTokens
	if prefixOnly {
		limit = TurnPrefixMaxTokens
	}
	if req.MaxSummaryTokens > 0 {
		limit = min(limit, req.MaxSummaryTokens)
	}
	recorded := ""
	if !prefixOnly {
		recorded = escapeTags(req.Ledger.Render())
	}
	note := prompts.Facts(recorded, limit)
	render := func(conversation string) string {
		var (
			out string
			err error
		)
		switch {
		case prefixOnly:
			out, err = prompts.SplitTurn(conversation, focus)
		case previous != "":
			out, err = prompts.Update(conversation, previous, focus)
		default:
			out, err = prompts.Summary(conversation, focus)
		}
		if err != nil {
			// The embedded templates are covered by tests; failing here is a programming error.
			panic(fmt.Sprintf("compaction: render prompt: %v", err))
		}
		return out + "\n\n" + note
	}

	paras := make([]string, 0, len(entries))
	for _, e := range entries {
		if p := serializeEntry(e); p != "" {
			paras = append(paras, escapeTags(p))
		}
	}
	conversation := strings.Join(paras, "\n\n")
	if conversation == "" {
		conversation = "(no messages)"
	}
	system := prompts.System()
	if limit := req.MaxInputTokens; limit > 0 {
		fixed := EstimateText(system) + EstimateText(render("x"))
		if fixed+EstimateText(conversation) > limit {
			conversation = trimOldest(paras, limit-fixed)
		}
	}
	return Prompt{System: system, User: render(conversation), Conversation: conversation, MaxTokens: limit}
}

// trimOldest keeps the newest paragraphs that fit budget tokens, behind a note saying how many
// were left out. The note is kept even when nothing fits, so the model knows why.
func trimOldest(paras []string, budget int) string {
	note := func(dropped int) string {
		return fmt.Sprintf("[Note]: %d earlier messages were left out to fit the summarizer's input limit.", dropped)
	}
	used := EstimateText(note(len(paras))) + 1
	keep := len(paras)
	for keep > 0 {
		t := EstimateText(paras[keep-1]) + 1
		if used+t > budget {
			break
		}
		used += t
		keep--
	}
	return strings.Join(append([]string{note(keep)}, paras[keep:]...), "\n\n")
}

// escapeTags keeps text from closing the tags that frame it in the prompt.
func escapeTags(s string) string {
	if !strings.Contains(s, "</") {
		return s
	}
	return tagEscaper.Replace(s)
}

var tagEscaper = strings.NewReplacer(
	"</conversation>", `<\/conversation>`,
	"</previous-summary>", `<\/previous-summary>`,
	"</recorded-facts>", `<\/recorded-facts>`,
)

// StripFileTags removes the blocks the server appends to a stored summary, the
// <read-files> and <modified-files> lists and the ledger's blocks (LedgerTags), wherever they
// are, so they are not fed back to a summarizer (and duplicated) next time.
func StripFileTags(summary string) string {
	for _, tag := range append([]string{"read-files", "modified-files"}, LedgerTags...) {
		for {
			i := strings.Index(summary, "<"+tag+">")
			if i < 0 {
				break
			}
			end := "</" + tag + ">"
			j := strings.Index(summary[i:], end)
			if j < 0 {
				summary = summary[:i]
				break
			}
			summary = summary[:i] + summary[i+j+len(end):]
		}
	}
	return strings.TrimRight(summary, " \n\t")
}
