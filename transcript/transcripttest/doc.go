// Package transcripttest gives tests and benchmarks real coding-agent conversations as contract
// messages: the licensed transcript excerpts in the repository's top-level testdata/ (always
// there, even on a fresh clone) and, when present, the full shared corpus (see testpaths).
//
// Only tests import it. It imports transcript (to convert the transcripts, which is why it
// lives under it) and message, so it points only downward; the packages below transcript
// (message, memory) use it from their external test packages (package x_test).
package transcripttest
