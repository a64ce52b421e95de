package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
)

func TestConditions(t *testing.T) {
	path := func(errno error) error {
		return fmt.Errorf("append: %w", &fs.PathError{Op: "write", Path: "/store/sessions/x.tail.jsonl", Err: errno})
	}
	for _, tc := range []struct {
		err            error
		full, readOnly bool
	}{
		{path(syscall.ENOSPC), true, false},
		{path(syscall.EDQUOT), true, false},
		{fmt.Errorf("commit: %w", ErrDiskFull), true, false},
		{path(syscall.EROFS), false, true},
		{path(syscall.EACCES), false, true},
		{path(syscall.EPERM), false, true},
		{fmt.Errorf("insert: %w", ErrReadOnly), false, true},
		{path(syscall.EIO), false, false},
		{errors.New("no space left on device"), false, false}, // text is not a condition
		{nil, false, false},
	} {
		if got := DiskFull(tc.err); got != tc.full {
			t.Errorf("DiskFull(%v) = %v", tc.err, got)
		}
		if got := ReadOnly(tc.err); got != tc.readOnly {
			t.Errorf("ReadOnly(%v) = %v", tc.err, got)
		}
	}
}
