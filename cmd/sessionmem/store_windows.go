//go:build windows

package main

// localAppData is %LOCALAPPDATA% (C:\Users\<name>\AppData\Local), where a Windows program
// keeps its per-user data that does not roam between machines: a store of sessions, its
// locks and its search index are this machine's. HOME is seldom set on Windows.
func localAppData(getenv func(string) string) string { return getenv("LOCALAPPDATA") }
