package compaction

import (
	"encoding/json"
	"slices"
	"strings"
)

// LedgerMaxTokens bounds the rendered ledger (the tagged blocks appended to a stored summary).
// When the facts need more, the least durable go first (see Ledger.Fit) and are counted in
// Dropped.
const LedgerMaxTokens = 5500

// Statuses of ledger facts.
const (
	StatusOK       = "ok"       // a command's last run succeeded
	StatusFailed   = "failed"   // a command's last run failed
	StatusOpen     = "open"     // an error nothing later resolved
	StatusResolved = "resolved" // an error a later successful run (or a newer run without it) resolved
)

// Ledger is the durable-facts ledger of a session: what a developer needs to carry on,
// computed deterministically from the messages compacted so far (never by a model) and carried
// from compaction to compaction the way file lists are. Each list is oldest first; a fact seen
// again moves to the end.
type Ledger struct {
	// Constraints are the user's instructions and preferences, as the user wrote them.
	Constraints []LedgerNote `json:"constraints"`
	// Values are lines in which the user stated numbers, colours, versions, sizes or mappings.
	Values []LedgerNote `json:"values"`
	// Commands are the shell commands run (exploration such as ls, cat or grep left out), with
	// the outcome of their last run.
	Commands []LedgerCommand `json:"commands"`
	// Errors are the identifying lines of failures, open until a later run resolves them.
	Errors []LedgerError `json:"errors"`
	// Dropped counts the facts Fit removed to keep the ledger within its budget.
	Dropped LedgerDropped `json:"dropped"`
}

// LedgerNote is a constraint or value in the user's words.
type LedgerNote struct {
	Text string `json:"text"`
	// Superseded marks a value the user later restated for the same thing.
	Superseded bool `json:"superseded,omitempty"`
}

// LedgerCommand is a command and the outcome of its last run.
type LedgerCommand struct {
	Command string `json:"command"`
	Status  string `json:"status"` // StatusOK or StatusFailed
	Runs    int    `json:"runs"`
}

// LedgerError is a failure's identifying line.
type LedgerError struct {
	Error  string `json:"error"`
	Status string `json:"status"` // StatusOpen or StatusResolved
	// Source is what failed: a command, a tool and its file ("Edit lib/a.ex"), or "user" for an
	// error the user pasted.
	Source string `json:"source,omitempty"`
}

// LedgerDropped counts facts dropped to keep the ledger within budget, per kind.
type LedgerDropped struct {
	Constraints int `json:"constraints"`
	Values      int `json:"values"`
	Commands    int `json:"commands"`
	Errors      int `json:"errors"`
}

// MarshalJSON writes empty lists as [] rather than null, as output schemas expect.
func (l Ledger) MarshalJSON() ([]byte, error) {
	type plain Ledger
	p := plain(l)
	p.Constraints = nonNil(p.Constraints)
	p.Values = nonNil(p.Values)
	p.Commands = nonNil(p.Commands)
	p.Errors = nonNil(p.Errors)
	return json.Marshal(p)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Total is the number of facts dropped.
func (d LedgerDropped) Total() int { return d.Constraints + d.Values + d.Commands + d.Errors }

// Empty reports whether the ledger holds nothing (dropped counts included).
func (l *Ledger) Empty() bool {
	return l == nil || (len(l.Constraints) == 0 && len(l.Values) == 0 && len(l.Commands) == 0 &&
		len(l.Errors) == 0 && l.Dropped.Total() == 0)
}

// Clone returns a deep copy; nil gives an empty ledger.
func (l *Ledger) Clone() Ledger {
	if l == nil {
		return Ledger{}
	}
	return Ledger{
		Constraints: slices.Clone(l.Constraints),
		Values:      slices.Clone(l.Values),
		Commands:    slices.Clone(l.Commands),
		Errors:      slices.Clone(l.Errors),
		Dropped:     l.Dropped,
	}
}

// UpdateLedger returns prev (the previous compaction's ledger, nil for none) with the facts of
// entries added: the messages being folded into a summary, oldest first. workingDir, when
// set, shortens commands that cd into it. The result is not yet fitted to a budget (see Fit).
//
// Facts merge by identity: a constraint or value already recorded moves to the end; a value
// the user restates for the same thing supersedes the older one; a command run again updates
// its outcome and run count; an error seen again reopens. A command that succeeds resolves the
// open errors it produced earlier, and a newer complete run of it that fails differently
// resolves those it no longer reports; a tool call that succeeds on a file resolves that
// tool's earlier failures on it.
func UpdateLedger(prev *Ledger, entries []Entry, workingDir string) Ledger {
	l := prev.Clone()
	for _, ev := range ledgerEvents(parseWindow(entries), workingDir) {
		l.apply(ev)
	}
	return l
}

func (l *Ledger) apply(ev ledgerEvent) {
	if ev.user {
		for _, c := range ev.constraints {
			l.Constraints = upsertNote(l.Constraints, c)
		}
		for _, v := range ev.values {
			key := valueKey(v)
			for i := range l.Values {
				if valueKey(l.Values[i].Text) == key && normFact(l.Values[i].Text) != normFact(v) {
					l.Values[i].Superseded = true
				}
			}
			l.Values = upsertNote(l.Values, v)
		}
		for _, e := range ev.errors {
			l.addError(e, "user")
		}
		return
	}
	if ev.command != "" && ev.record {
		status := StatusOK
		if !ev.ok {
			status = StatusFailed
		}
		runs := 1
		if i := slices.IndexFunc(l.Commands, func(c LedgerCommand) bool { return c.Command == ev.command }); i >= 0 {
			runs += l.Commands[i].Runs
			l.Commands = slices.Delete(l.Commands, i, i+1)
		}
		l.Commands = append(l.Commands, LedgerCommand{Command: ev.command, Status: status, Runs: runs})
	}
	source := ev.source()
	// A command that has reported compiler diagnostics checks the whole project: when it
	// completes, diagnostics it no longer reports are gone, whichever checker reported them.
	checker := ev.command != "" && slices.ContainsFunc(l.Errors, func(e LedgerError) bool {
		return e.Source == ev.command && isDiagnostic(e.Error)
	})
	switch {
	case ev.ok:
		for i := range l.Errors {
			if e := &l.Errors[i]; e.Status == StatusOpen && (ev.resolves(e.Source) || (checker && isDiagnostic(e.Error))) {
				e.Status = StatusResolved
			}
		}
	case len(ev.errors) > 0:
		if ev.complete {
			// A complete newer run of the same command lists what still fails: what it no
			// longer reports has been dealt with.
			keys := map[string]bool{}
			for _, e := range ev.errors {
				keys[errorKey(e)] = true
			}
			for i := range l.Errors {
				e := &l.Errors[i]
				if e.Status == StatusOpen && !keys[errorKey(e.Error)] &&
					(e.Source == source || (checker && isDiagnostic(e.Error))) {
					e.Status = StatusResolved
				}
			}
		}
		for _, e := range ev.errors {
			l.addError(e, source)
		}
	}
}

// isDiagnostic reports a compiler diagnostic line (file, position, error code).
func isDiagnostic(line string) bool { return strings.Contains(line, "error TS") }

// upsertNote appends text, or moves an equal note to the end (and makes it current again).
func upsertNote(notes []LedgerNote, text string) []LedgerNote {
	k := normFact(text)
	if i := slices.IndexFunc(notes, func(n LedgerNote) bool { return normFact(n.Text) == k }); i >= 0 {
		notes = slices.Delete(notes, i, i+1)
	}
	return append(notes, LedgerNote{Text: text})
}

func (l *Ledger) addError(text, source string) {
	k := errorKey(text)
	if i := slices.IndexFunc(l.Errors, func(e LedgerError) bool { return errorKey(e.Error) == k }); i >= 0 {
		l.Errors = slices.Delete(l.Errors, i, i+1)
	}
	l.Errors = append(l.Errors, LedgerError{Error: text, Status: StatusOpen, Source: source})
}

// normFact is the identity of a note: lower case, white space collapsed.
func normFact(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// Fit drops facts until the rendered ledger holds at most maxTokens (<= 0: LedgerMaxTokens),
// least durable first: resolved errors, superseded values, commands whose last run succeeded,
// open errors, failed commands, values, and last of all the user's constraints; oldest first
// within each. Every dropped fact is counted in Dropped.
func (l *Ledger) Fit(maxTokens int) {
	if maxTokens <= 0 {
		maxTokens = LedgerMaxTokens
	}
	size := EstimateText(l.Render())
	for size > maxTokens {
		if !l.dropOne() {
			return
		}
		size = EstimateText(l.Render())
	}
}

// dropOne removes the least durable fact; false when nothing is left to drop.
func (l *Ledger) dropOne() bool {
	dropErr := func(status string) bool {
		i := slices.IndexFunc(l.Errors, func(e LedgerError) bool { return e.Status == status })
		if i < 0 {
			return false
		}
		l.Errors = slices.Delete(l.Errors, i, i+1)
		l.Dropped.Errors++
		return true
	}
	dropCmd := func(status string) bool {
		i := slices.IndexFunc(l.Commands, func(c LedgerCommand) bool { return c.Status == status })
		if i < 0 {
			return false
		}
		l.Commands = slices.Delete(l.Commands, i, i+1)
		l.Dropped.Commands++
		return true
	}
	dropNote := func(notes *[]LedgerNote, count *int, superseded bool) bool {
		i := slices.IndexFunc(*notes, func(n LedgerNote) bool { return !superseded || n.Superseded })
		if i < 0 {
			return false
		}
		*notes = slices.Delete(*notes, i, i+1)
		(*count)++
		return true
	}
	return dropErr(StatusResolved) ||
		dropNote(&l.Values, &l.Dropped.Values, true) ||
		dropCmd(StatusOK) ||
		dropErr(StatusOpen) ||
		dropCmd(StatusFailed) ||
		dropNote(&l.Values, &l.Dropped.Values, false) ||
		dropNote(&l.Constraints, &l.Dropped.Constraints, false)
}
