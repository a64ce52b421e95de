package message

import "testing"

// TestInputFastTables: the one-pass decoder's field tables name exactly the fields of the
// general decoder's (inputMessageFields, inputBlockFields, requiredInputField); a field one
// knows and the other does not would make the two decode differently or decline needlessly.
func TestInputFastTables(t *testing.T) {
	for k := range inputMessageFields {
		if messageField(k) == 0 {
			t.Errorf("message field %q has no bit in messageField", k)
		}
	}
	for _, k := range []string{"id", "entry_id", "role", "content", "usage", "pinned", "Role", "extra", ""} {
		if messageField(k) != 0 && !inputMessageFields[k] {
			t.Errorf("messageField knows %q, which inputMessageFields does not allow", k)
		}
	}
	inSome := map[string]bool{}
	for typ, fields := range inputBlockFields {
		for k := range fields {
			inSome[k] = true
			if blockFieldBits[k] == 0 {
				t.Errorf("%s block field %q has no bit", typ, k)
			}
		}
	}
	for k := range blockFieldBits {
		if !inSome[k] {
			t.Errorf("blockFieldBits knows %q, which no block allows", k)
		}
	}
	want := map[string]struct{ allowed, needed int }{
		BlockText:       {bfType | bfText, bfText},
		BlockThinking:   {bfType | bfThinking, bfThinking},
		BlockToolCall:   {bfType | bfID | bfName | bfArguments, 0},
		BlockToolResult: {bfType | bfToolCallID | bfContent | bfIsError, 0},
		BlockImage:      {bfType | bfMediaType | bfData, 0},
	}
	if len(blockFieldsOf) != len(want) {
		t.Fatalf("blockFieldsOf has %d types, want %d", len(blockFieldsOf), len(want))
	}
	for typ, w := range want {
		if got := blockFieldsOf[typ]; got != w {
			t.Errorf("blockFieldsOf[%s] = %+v, want %+v", typ, got, w)
		}
	}
}
