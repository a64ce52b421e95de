// Package compaction decides how a long session is folded into a summary and writes that
// summary. It owns:
//
//   - token estimates (characters / 4, rounded up; images at a fixed weight) and the
//     should-compact rule, calibrated by the usage clients report;
//   - the cut: which entries stay verbatim (about keepRecentTokens of the newest), never
//     separating a tool call from its result, and whether the cut splits a turn;
//   - the text a summarizer sees (Serialize, BuildPrompt, with templates from prompts);
//   - the summarizers behind the narrow Summarizer interface: Extractive (deterministic, no
//     model), the OpenAI-compatible llm summarizer (NewLLM), and SummarizerFunc for callers
//     that bring their own model (MCP sampling in mcpserver); Run drives a split-turn
//     compaction through any of them;
//   - the durable-facts ledger (UpdateLedger, Ledger): the user's instructions and values,
//     commands with their last outcome and the errors still open, computed from the messages
//     by rules, cumulative, bounded (Fit) and rendered as tagged blocks (Render,
//     LedgerFromSummary);
//   - the size bound of a stored summary (budget.go): SummaryBudgetTokens for prose, file
//     blocks and ledger together, ProseBudget and FitProse;
//   - calibrated cutting: CalibrationFactor and CalibratedWeights turn the character estimate
//     into the calibrated tokens of context_tokens, and FindCutWeighted cuts in them.
//
// compaction reads messages as JSON in the contract's block form (with gjson, and with
// internal/jsonscan's strict reader for the one-pass estimate); it does not import memory,
// storage, fileops or mcpserver, and imports only prompts and internal/jsonscan of this module.
// Storing the compaction, file tracking and choosing a summarizer belong to memory.
//
// Concurrency: functions are pure or depend only on their arguments; Extractive and the llm
// summarizer hold no mutable state and are safe for concurrent use. Run makes at most two
// concurrent Summarize calls and returns only after both have finished.
package compaction
