// Package testpaths locates test fixtures for every package's tests: the repository's
// top-level testdata/ directory, which a fresh clone always has, and the optional shared
// corpus of full transcripts (../shared/corpus or $SESSIONMEM_CORPUS), which benchmarks and
// optional checks use when it is present and skip when it is not.
//
// Only tests import it. It imports nothing of sessionmem, so any package's internal tests can.
package testpaths
