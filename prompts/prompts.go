package prompts

import (
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"
)

//go:embed templates/*.md
var files embed.FS

// Names of the templates returned by All.
const (
	NameSummary   = "compact_summary"
	NameUpdate    = "compact_update"
	NameSplitTurn = "compact_split_turn"
)

// Argument names shared by the templates.
const (
	ArgConversation    = "conversation"
	ArgPreviousSummary = "previous_summary"
	ArgFocus           = "focus"
)

var (
	// ErrUnknownTemplate is returned by Render when no template has the given name.
	ErrUnknownTemplate = errors.New("unknown prompt template")
	// ErrBadArguments is returned when a required argument is missing or an argument is not
	// one the template declares.
	ErrBadArguments = errors.New("bad prompt arguments")
)

// Arg describes one argument of a Template.
type Arg struct {
	Name        string
	Description string
	Required    bool
}

// Template is one user-message template. The zero value is not usable; get templates from
// All or Lookup.
type Template struct {
	Name        string
	Description string
	Args        []Arg
	tmpl        *template.Template
}

// Render fills the template. Every required argument must be present and non-blank, and
// every given argument must be declared in Args; otherwise the error wraps ErrBadArguments.
func (t Template) Render(args map[string]string) (string, error) {
	if t.tmpl == nil {
		return "", fmt.Errorf("render %q: %w", t.Name, ErrUnknownTemplate)
	}
	data := make(map[string]string, len(t.Args))
	for _, a := range t.Args {
		v := strings.TrimSpace(args[a.Name])
		if a.Required && v == "" {
			return "", fmt.Errorf("render %s: argument %q is required: %w", t.Name, a.Name, ErrBadArguments)
		}
		data[a.Name] = v
	}
	for k := range args {
		if !slices.ContainsFunc(t.Args, func(a Arg) bool { return a.Name == k }) {
			return "", fmt.Errorf("render %s: unknown argument %q (known: %s): %w",
				t.Name, k, strings.Join(t.argNames(), ", "), ErrBadArguments)
		}
	}
	var b strings.Builder
	if err := t.tmpl.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render %s: %w", t.Name, err)
	}
	return b.String(), nil
}

func (t Template) argNames() []string {
	names := make([]string, len(t.Args))
	for i, a := range t.Args {
		names[i] = a.Name
	}
	return names
}

var (
	argConversation = Arg{
		Name: ArgConversation,
		Description: "The conversation to summarize as labelled plain text. Leave empty to " +
			"summarize the conversation the prompt is used in.",
	}
	argFocus = Arg{
		Name:        ArgFocus,
		Description: "Optional extra instructions: what the summary should pay particular attention to.",
	}
	argPrevious = Arg{
		Name:        ArgPreviousSummary,
		Description: "The earlier summary to update, without file lists.",
		Required:    true,
	}
)

var (
	system = mustRead("templates/system.md")
	facts  = mustParse("facts", "templates/facts.md")
	all    = []Template{
		{
			Name:        NameSummary,
			Description: "Write a first structured context checkpoint (goal, constraints, progress, decisions, next steps, critical context) of a coding-agent conversation.",
			Args:        []Arg{argConversation, argFocus},
			tmpl:        mustParse(NameSummary, "templates/summary.md"),
		},
		{
			Name:        NameUpdate,
			Description: "Merge new conversation into an earlier context checkpoint, keeping every durable fact of the earlier one.",
			Args:        []Arg{argConversation, argPrevious, argFocus},
			tmpl:        mustParse(NameUpdate, "templates/update.md"),
		},
		{
			Name:        NameSplitTurn,
			Description: "Summarize the beginning of one long turn whose end is kept verbatim (original request, early progress, context for the rest).",
			Args:        []Arg{argConversation, argFocus},
			tmpl:        mustParse(NameSplitTurn, "templates/split_turn.md"),
		},
	}
)

func mustRead(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("prompts: embedded %s: %v", name, err))
	}
	return strings.TrimSpace(string(b))
}

func mustParse(name, file string) *template.Template {
	return template.Must(template.New(name).Option("missingkey=error").Parse(mustRead(file)))
}

// System returns the system prompt every summarization request uses: the model is a
// summarizer only and must not carry on the conversation.
func System() string { return system }

// All returns the user-message templates, in a stable order. The slice is a copy.
func All() []Template { return slices.Clone(all) }

// Lookup returns the template named name.
func Lookup(name string) (Template, bool) {
	i := slices.IndexFunc(all, func(t Template) bool { return t.Name == name })
	if i < 0 {
		return Template{}, false
	}
	return all[i], true
}

// Render renders the template named name with args.
func Render(name string, args map[string]string) (string, error) {
	t, ok := Lookup(name)
	if !ok {
		return "", fmt.Errorf("render %q: %w", name, ErrUnknownTemplate)
	}
	return t.Render(args)
}

// Summary renders the first-summary template.
func Summary(conversation, focus string) (string, error) {
	return Render(NameSummary, map[string]string{ArgConversation: conversation, ArgFocus: focus})
}

// Update renders the update template for merging conversation into previousSummary.
func Update(conversation, previousSummary, focus string) (string, error) {
	return Render(NameUpdate, map[string]string{
		ArgConversation: conversation, ArgPreviousSummary: previousSummary, ArgFocus: focus,
	})
}

// SplitTurn renders the split-turn template for the beginning of a long turn.
func SplitTurn(conversation, focus string) (string, error) {
	return Render(NameSplitTurn, map[string]string{ArgConversation: conversation, ArgFocus: focus})
}

// Facts renders the note that follows a summarization request when the server keeps a
// durable-facts ledger or bounds the summary's size: the recorded facts (rendered ledger
// blocks, or a pointer to where the caller finds them) with the instruction not to repeat
// them, and the size limit. Both parts are optional; with neither it returns "". limitTokens
// <= 0 states no limit.
func Facts(recorded string, limitTokens int) string {
	data := map[string]string{"facts": strings.TrimSpace(recorded), "limit": "", "chars": ""}
	if limitTokens > 0 {
		data["limit"] = fmt.Sprint(limitTokens)
		data["chars"] = fmt.Sprint(4 * limitTokens)
	}
	var b strings.Builder
	if err := facts.Execute(&b, data); err != nil {
		// The embedded template is covered by tests; failing here is a programming error.
		panic(fmt.Sprintf("prompts: render facts: %v", err))
	}
	return strings.TrimSpace(b.String())
}
