package ops

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/sessionmem/sessionmem/mcpserver"
	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage"
)

func TestClassify(t *testing.T) {
	storeErr := func(sentinel error) error {
		return &memory.Error{Kind: memory.ErrUnavailable, Msg: "m", Cause: fmt.Errorf("read: %w", sentinel)}
	}
	tests := []struct {
		name    string
		call    mcpserver.ToolCall
		outcome string
		kind    string
	}{
		{"success", mcpserver.ToolCall{}, OutcomeOK, ""},
		{"asked for input", mcpserver.ToolCall{InputRequired: true}, OutcomeInputRequired, ""},
		{"panic", mcpserver.ToolCall{Failed: true, Panicked: true}, OutcomePanic, ""},
		{"refused without an error", mcpserver.ToolCall{Failed: true}, OutcomeRefused, ""},
		{"bad argument", mcpserver.ToolCall{Failed: true, Err: &memory.Error{Kind: memory.ErrInvalid}}, OutcomeInvalid, ""},
		{"not found", mcpserver.ToolCall{Failed: true, Err: &memory.Error{Kind: memory.ErrNotFound}}, OutcomeNotFound, ""},
		{"stale", mcpserver.ToolCall{Failed: true, Err: &memory.Error{Kind: memory.ErrStale}}, OutcomeStale, ""},
		{"no summarizer", mcpserver.ToolCall{Failed: true, Err: &memory.Error{Kind: memory.ErrUnavailable}}, OutcomeUnavailable, ""},
		{"database down", mcpserver.ToolCall{Failed: true, Err: storeErr(storage.ErrUnavailable)}, OutcomeStoreError, StoreUnavailable},
		{"damaged", mcpserver.ToolCall{Failed: true, Err: storeErr(storage.ErrCorrupt)}, OutcomeStoreError, StoreCorrupt},
		{"newer format", mcpserver.ToolCall{Failed: true, Err: storeErr(&storage.NewerFormatError{What: "x"})}, OutcomeStoreError, StoreNewerFormat},
		{"closed", mcpserver.ToolCall{Failed: true, Err: fmt.Errorf("get: %w", storage.ErrClosed)}, OutcomeStoreError, StoreClosed},
		{"disk full", mcpserver.ToolCall{Failed: true, Err: memory.StoreCondition(fmt.Errorf("append: %w", syscall.ENOSPC))}, OutcomeStoreError, StoreDiskFull},
		{"read-only", mcpserver.ToolCall{Failed: true, Err: memory.StoreCondition(fmt.Errorf("append: %w", syscall.EROFS))}, OutcomeStoreError, StoreReadOnly},
		{"search index", mcpserver.ToolCall{Failed: true, Err: storage.ErrSearchUnavailable}, OutcomeStoreError, StoreSearchUnavailable},
		{"disk", mcpserver.ToolCall{Failed: true, Err: fmt.Errorf("append: %w", &fs.PathError{Op: "write", Path: "/s", Err: syscall.EIO})}, OutcomeStoreError, StoreIO},
		{"rename", mcpserver.ToolCall{Failed: true, Err: &os.LinkError{Op: "rename", Err: syscall.EXDEV}}, OutcomeStoreError, StoreIO},
		{"timeout", mcpserver.ToolCall{Failed: true, Err: fmt.Errorf("x: %w", context.DeadlineExceeded)}, OutcomeTimeout, ""},
		{"canceled", mcpserver.ToolCall{Failed: true, Err: context.Canceled}, OutcomeCanceled, ""},
		{"anything else", mcpserver.ToolCall{Failed: true, Err: fmt.Errorf("encode")}, OutcomeInternal, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outcome, kind := Classify(tt.call)
			if outcome != tt.outcome || kind != tt.kind {
				t.Fatalf("Classify = %q, %q; want %q, %q", outcome, kind, tt.outcome, tt.kind)
			}
		})
	}
}
