package compaction

import (
	"fmt"
	"strings"
)

// The size bound of a stored summary. Whatever writes the prose (agent, sampling, llm,
// extractive) and however many compactions it has been through, the stored summary (prose,
// then the <read-files>/<modified-files> blocks, then the ledger blocks) stays within
// SummaryBudgetTokens estimated tokens (EstimateText): the ledger is fitted to LedgerMaxTokens,
// the file blocks in the text to FileBlocksMaxTokens (the structured file lists stay
// complete), and the prose gets the rest (ProseBudget), at least ProseMinTokens.
const (
	SummaryBudgetTokens = 12000
	FileBlocksMaxTokens = 3000
	// joinTokens covers the blank lines that join prose, file blocks and ledger.
	joinTokens = 8
	// ProseMinTokens is the least ProseBudget returns.
	ProseMinTokens = SummaryBudgetTokens - LedgerMaxTokens - FileBlocksMaxTokens - joinTokens
)

// ProseBudget is how many estimated tokens the prose of a summary may take next to fileBlocks
// (the rendered file lists, within FileBlocksMaxTokens) and ledger (within LedgerMaxTokens) so
// that the stored summary stays within SummaryBudgetTokens. It is at most SummaryMaxTokens,
// the output cap asked of a model.
func ProseBudget(fileBlocks, ledger string) int {
	b := SummaryBudgetTokens - EstimateText(fileBlocks) - EstimateText(ledger) - joinTokens
	// Blocks over their own bounds are the caller's mistake; the prose still gets a little.
	return max(min(b, SummaryMaxTokens), 256)
}

// FitProse returns prose cut to at most maxTokens estimated tokens, at a line boundary, with a
// last line saying how many characters were cut; prose that fits is returned unchanged.
func FitProse(prose string, maxTokens int) string {
	if maxTokens <= 0 || EstimateText(prose) <= maxTokens {
		return prose
	}
	note := func(n int) string {
		return fmt.Sprintf("\n[… %d more characters cut to fit the summary's size limit]", n)
	}
	kept, _ := CutChars(prose, 4*maxTokens-len([]rune(note(len(prose)))))
	if i := strings.LastIndexByte(kept, '\n'); i > len(kept)/2 {
		kept = kept[:i]
	}
	kept = strings.TrimRight(kept, " \t\r\n")
	return kept + note(len([]rune(prose))-len([]rune(kept)))
}
