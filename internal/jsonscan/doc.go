// Package jsonscan reads JSON text strictly and in one pass, without building values, for the
// fast readers of the save path: compaction counts a message's characters with it
// (EstimateMessage), and memory decodes a client's message and checks, validates and compacts
// tool-call arguments with it.
//
// It owns the grammar (RFC 8259, with bytes that are not UTF-8 allowed inside strings, as
// encoding/json allows them), the reading of string tokens eight bytes at a time, and the
// value of a string token as encoding/json decodes it (its characters, its bytes). What the
// values mean (which keys count, what a message is) belongs to its callers.
//
// Its callers decline what the Reader does not read and hand it to general code (gjson,
// encoding/json), so the Reader only has to be right about what it accepts: what it reads as
// valid, encoding/json reads as valid too, with the same strings.
//
// Deeper answers how deep a text nests without recursing, for the transports and memory to
// refuse text nested deeper than their limits before a recursive reader meets it.
//
// It imports only the standard library. jsontest, below it, holds the random JSON that its
// callers' differential tests share; only tests import that.
package jsonscan
