//go:build !windows

package storage

// diskFullOS and readOnlyOS recognise the platform's own codes beside the errno values; on
// Unix those are all (conditions_windows.go has Windows').
func diskFullOS(error) bool { return false }
func readOnlyOS(error) bool { return false }
