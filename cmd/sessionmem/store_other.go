//go:build !windows

package main

// localAppData is Windows' per-user data directory (store_windows.go); elsewhere the XDG
// directories serve.
func localAppData(func(string) string) string { return "" }
