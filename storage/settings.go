package storage

import "context"

// Settings is implemented by stores that keep a few store-wide values themselves (the
// PostgreSQL store, in a table), where no file beside the store can hold them. sessionmem
// keeps there, for instance, which redaction rules the whole store was last redacted with,
// so that every server re-applies changed rules once, not at every start. A store without it
// (the local store) keeps such values in files of its directory, which its caller manages.
//
// It is an optional interface: callers check for it with a type assertion.
type Settings interface {
	// GetSetting returns the value stored under key; ok is false when there is none.
	GetSetting(ctx context.Context, key string) (value string, ok bool, err error)
	// PutSetting stores value under key durably, replacing what was there.
	PutSetting(ctx context.Context, key, value string) error
}
