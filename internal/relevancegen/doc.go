// Package relevancegen builds the relevance benchmark's fixture of real conversations,
// testdata/relevance/sessions.jsonl.zst, from the four transcripts of the shared corpus,
// converted to contract messages by transcript.ParseFile as transcript/transcripttest does.
//
// It holds only tests: regenerate the fixture with
//
//	go test ./internal/relevancegen/ -run TestRegenerate -regen
//
// and, without -regen, TestFixtureCurrent checks that the committed fixture is what the
// conversion gives today (both skip on a clone without the corpus). The fixture lives in a
// file of its own rather than being converted at test time because storage/relevance, which
// reads it, sits below memory and transcript and must not import them, and because the
// judged questions name its message ids, which must never change under them.
package relevancegen
