package fileops

import (
	"path"
	"strings"
)

// Normalize turns a path named in a tool call into the form stored in the lists: relative to
// workingDir (clean, slash-separated, no leading "./") when it lies inside workingDir,
// absolute and cleaned otherwise. A relative p is taken as relative to workingDir; with an empty
// workingDir it stays relative (cleaned). Paths starting with "~" are kept as written (the home
// directory of the recording machine is unknown). ok is false for what names no file: an empty
// or blank path, one holding a newline, carriage return or NUL (it could not be listed one per
// line), and workingDir itself.
//
// Paths are handled as slash-separated text, independent of the host OS, because a session's
// working_dir need not exist on this machine.
func Normalize(p, workingDir string) (norm string, ok bool) {
	p = strings.TrimSpace(p)
	if p == "" || strings.ContainsAny(p, "\n\r\x00") {
		return "", false
	}
	if p[0] == '~' {
		return p, true
	}
	wd := strings.TrimSpace(workingDir)
	if wd != "" {
		wd = path.Clean(wd)
	}
	if !path.IsAbs(p) {
		if wd == "" {
			c := path.Clean(p)
			return c, c != "."
		}
		p = path.Join(wd, p)
	} else {
		p = path.Clean(p)
	}
	if wd == "" {
		return p, true
	}
	if p == wd {
		return "", false
	}
	if wd == "/" {
		return p[1:], true
	}
	if len(p) > len(wd) && p[len(wd)] == '/' && p[:len(wd)] == wd {
		return p[len(wd)+1:], true
	}
	return p, true
}

// resolveDir returns dir taken relative to base (both slash paths); "~" dirs are kept.
func resolveDir(base, dir string) string {
	dir = strings.TrimSpace(dir)
	if dir == "" {
		return base
	}
	if path.IsAbs(dir) || dir[0] == '~' || base == "" {
		return path.Clean(dir)
	}
	return path.Join(base, dir)
}
