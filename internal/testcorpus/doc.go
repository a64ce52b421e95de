// Package testcorpus gives tests and benchmarks real coding-agent conversations as contract
// messages: the licensed transcript excerpts in the repository's top-level testdata/ (always
// there, even on a fresh clone) and, when present, the full shared corpus (see testpaths).
//
// Only tests import it. It imports transcript (to convert the transcripts) and memory, so
// only external test packages (package x_test) of memory and packages above it can use it.
package testcorpus
