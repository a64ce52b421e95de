package fileops

import "strings"

// Patch headers of Codex's apply_patch format. Every file a patch names is modified: added,
// updated, deleted, or the target of a move (the source is named by Update File).
var patchHeaders = []string{"*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:"}

// PatchPaths returns the paths named by the headers of an apply_patch text, in order, as
// written. Headers must start their line: hunk lines begin with ' ', '+' or '-', so a file
// whose content mentions "*** Add File:" cannot be mistaken for a header.
func PatchPaths(patch string) []string {
	var out []string
	for len(patch) > 0 {
		line := patch
		if i := strings.IndexByte(patch, '\n'); i >= 0 {
			line, patch = patch[:i], patch[i+1:]
		} else {
			patch = ""
		}
		if !strings.HasPrefix(line, "*** ") {
			continue
		}
		for _, h := range patchHeaders {
			if rest, ok := strings.CutPrefix(line, h); ok {
				if p := strings.TrimSpace(rest); p != "" {
					out = append(out, p)
				}
				break
			}
		}
	}
	return out
}

func appendPatch(ops []FileOp, text, dir, wd string) []FileOp {
	for _, p := range PatchPaths(text) {
		ops = appendPath(ops, p, Modify, dir, wd)
	}
	return ops
}

func isApplyPatch(s string) bool { return s == "apply_patch" || s == "applypatch" }
