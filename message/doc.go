// Package message owns the contract's message: its model (Message, Block, Usage, roles and
// block types), the one place its field names are written (model.go: its constants and struct
// tags), and its readers and writers: DecodeInput reads a message as a client sends it
// (input.go, and a one-pass decoder for the common case, input_fast.go), DecodeStored reads
// one as stored (decode.go), Append writes it without reflection (encode.go), AppendASCII and
// WireChars write and measure JSON as resume pages send it (ascii.go). Each fast path
// has a differential test against the general one or encoding/json.
//
// It is a leaf: it imports only the standard library, gjson and internal/jsonscan, so that
// compaction, fileops, transcript, memory, viewer and mcpserver can all use it. Validation of
// what a save may store (ids, sizes, roles) stays with memory, which owns the limits.
package message
