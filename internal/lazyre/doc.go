// Package lazyre holds regular expressions compiled on their first use. Every sessionmem
// process (a server per agent session, a CLI command per hook) runs package init and builds
// its redactor before it can answer, and most never run most of their patterns: compaction's
// only serve a summary, and a redaction rule's only run where the prefilter found one of its
// triggers. Compiling them all up front took several milliseconds of every start.
package lazyre
