package main

// compact, delete and export: the commands that act on one session.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/transcript"
)

const compactHelp = `Usage: sessionmem compact ID [--summarizer extractive|llm] [--keep-recent-tokens N] [--instructions TEXT]

Fold everything older than the most recent N tokens of a session into a summary, as the
session_compact tool does, and print the context size before and after.

Flags:
  --summarizer NAME         extractive (no model) or llm (the OpenAI-compatible endpoint in
                            SESSIONMEM_LLM_URL / SESSIONMEM_LLM_MODEL / SESSIONMEM_LLM_API_KEY).
                            Default: llm when configured, else extractive.
  --keep-recent-tokens N    recent context kept verbatim (default 20000)
  --instructions TEXT       extra instructions for the summary (llm)
  --json                    print the result as JSON (the session_compact shape)
  --store DIR|URL           store directory or PostgreSQL URL (postgres://...) (default
                            $SESSIONMEM_STORE, else $XDG_DATA_HOME/sessionmem, else
                            ~/.local/share/sessionmem)

Examples:
  sessionmem compact cc-8463c716-a2ea-4c14-9efa-87158ebd9f20
  SESSIONMEM_LLM_URL=https://api.openai.com/v1/chat/completions SESSIONMEM_LLM_MODEL=gpt-4.1-mini \
    SESSIONMEM_LLM_API_KEY=... sessionmem compact ID --summarizer llm --keep-recent-tokens 8000
`

func compactCommand() command {
	return command{name: "compact", summary: "summarize a session's older messages (extractive or llm)", run: runCompact}
}

func runCompact(ctx context.Context, e *env, args []string) error {
	c := newCLIFlags("compact", compactHelp)
	summarizer := c.String("summarizer", "", "")
	keep := c.Int("keep-recent-tokens", 0, "")
	instructions := c.String("instructions", "", "")
	asJSON := c.Bool("json", false, "")
	id, err := c.parseID(e, args)
	if err != nil {
		return helpOrErr(err)
	}
	switch *summarizer {
	case "", memory.SummarizerExtractive, memory.SummarizerLLM:
	default:
		return c.usageError(e, "--summarizer %q: use extractive or llm (agent and sampling need an MCP client)", *summarizer)
	}
	if *keep < 0 {
		return c.usageError(e, "--keep-recent-tokens must be positive, got %d", *keep)
	}
	cs, err := openCLIStore(e, *c.store, openOptions{llm: true})
	if err != nil {
		return err
	}
	defer cs.close(e)
	name := *summarizer
	if name == memory.SummarizerLLM && !cs.llm {
		return fmt.Errorf("no LLM summarizer is configured: set %s and %s (and %s), or use --summarizer extractive",
			envLLMURL, envLLMModel, envLLMAPIKey)
	}
	if name == "" {
		name = memory.SummarizerExtractive
		if cs.llm {
			name = memory.SummarizerLLM
		}
	}
	prog := newProgress(e)
	defer prog.done()
	res, err := cs.svc.Compact(ctx, memory.CompactRequest{
		SessionID: id, KeepRecentTokens: *keep, Instructions: *instructions, Summarizer: name,
		Progress: func(done, total float64, msg string) {
			prog.update("compacting: "+msg, int(done), int(total))
		},
	})
	prog.done()
	if err != nil {
		if ierr := interrupted(ctx, "compact interrupted: %s is unchanged (a compaction is stored whole or not at all). "+
			"Run the same command again.", id); ierr != nil {
			return ierr
		}
		return sessionError(id, err)
	}
	if *asJSON {
		return writeJSON(e.stdout, res)
	}
	switch res.Status {
	case memory.StatusNothingToCompact:
		fmt.Fprintf(e.stdout, "Nothing to compact in %s: its context (%s tokens) fits in the recent window; "+
			"a smaller --keep-recent-tokens folds in more.\n", id, thousands(int64(res.ContextTokens)))
	case memory.StatusCompacted:
		fmt.Fprintf(e.stdout, "Compacted %s with the %s summarizer.\n", id, res.Summarizer)
		fmt.Fprintf(e.stdout, "Context tokens: %s → %s\n", thousands(int64(res.TokensBefore)), thousands(int64(res.TokensAfter)))
		fmt.Fprintf(e.stdout, "Files: %d read, %d modified\n", len(res.ReadFiles), len(res.ModifiedFiles))
		fmt.Fprintf(e.stdout, "Run 'sessionmem show %s' to read the summary.\n", id)
	default:
		return fmt.Errorf("compact %s: unexpected status %q", id, res.Status)
	}
	return nil
}

const deleteHelp = `Usage: sessionmem delete ID [--yes]

Delete a session and its files for good. On a terminal it asks first (any answer but y
deletes nothing and exits 1); when stdin is not a terminal (scripts, pipes) --yes is required.

Flags:
  --yes         do not ask
  --store LOC   store directory or PostgreSQL URL (postgres://...) (default $SESSIONMEM_STORE,
                else $XDG_DATA_HOME/sessionmem, else ~/.local/share/sessionmem)

Examples:
  sessionmem delete 01a196fb-1dd0-7135-9f31-cc1d42fe7a38
  sessionmem list --query scratch --json | jq -r '.[].session_id' | xargs -n1 sessionmem delete --yes
`

func deleteCommand() command {
	return command{name: "delete", summary: "delete a session (asks first unless --yes)", run: runDelete}
}

func runDelete(ctx context.Context, e *env, args []string) error {
	c := newCLIFlags("delete", deleteHelp)
	yes := c.Bool("yes", false, "")
	c.BoolVar(yes, "y", false, "")
	id, err := c.parseID(e, args)
	if err != nil {
		return helpOrErr(err)
	}
	interactive := isTerminal(e.stdin)
	if !*yes && !interactive {
		return c.usageError(e, "stdin is not a terminal, so there is nobody to ask: pass --yes to delete %s", id)
	}
	cs, err := openCLIStore(e, *c.store, openOptions{})
	if err != nil {
		return err
	}
	defer cs.close(e)
	s, err := cs.svc.Get(ctx, id)
	if err != nil {
		return sessionError(id, err)
	}
	if !*yes {
		label := cleanLine(s.Name, 60)
		if label == "" {
			label = cleanLine(s.Preview, 60)
		}
		yes, err := confirm(ctx, e, fmt.Sprintf("Delete session %s (%q, %d messages, updated %s)? [y/N] ",
			id, label, s.MessageCount, ago(s.UpdatedAt, cliNow())), "delete")
		if err != nil {
			return err
		}
		if !yes {
			return fmt.Errorf("%s not deleted (answer y to delete)", id)
		}
	}
	if _, err := cs.svc.Delete(ctx, id); err != nil {
		return sessionError(id, err)
	}
	fmt.Fprintf(e.stdout, "Deleted %s.\n", id)
	return nil
}

const exportHelp = `Usage: sessionmem export ID [-o FILE]

Write a session in sessionmem's export format (plain JSONL: a header line, then one line per
message in the contract's shape, with the latest compaction summary before the first message
it kept). 'sessionmem import --file FILE' reads it back; importing it twice adds nothing.

Flags:
  -o, --output FILE   write to FILE (replaced atomically, mode 0600) instead of stdout
  --store DIR|URL     store directory or PostgreSQL URL (postgres://...) (default
                      $SESSIONMEM_STORE, else $XDG_DATA_HOME/sessionmem, else
                      ~/.local/share/sessionmem)

Examples:
  sessionmem export cc-8463c716-a2ea-4c14-9efa-87158ebd9f20 -o session.jsonl
  sessionmem export ID | gzip > session.jsonl.gz
`

func exportCommand() command {
	return command{name: "export", summary: "write a session as JSONL (stdout or -o FILE)", run: runExport}
}

func runExport(ctx context.Context, e *env, args []string) error {
	c := newCLIFlags("export", exportHelp)
	out := c.String("o", "", "")
	c.StringVar(out, "output", "", "")
	id, err := c.parseID(e, args)
	if err != nil {
		return helpOrErr(err)
	}
	cs, err := openCLIStore(e, *c.store, openOptions{})
	if err != nil {
		return err
	}
	defer cs.close(e)
	// stopped is export's error: its report when a signal stopped it, which says what became
	// of the output.
	stopped := func(err error, output string) error {
		if ierr := interrupted(ctx, "export interrupted: %s. Run the same command again.", output); ierr != nil {
			return ierr
		}
		return sessionError(id, err)
	}
	if _, err := cs.svc.Get(ctx, id); err != nil {
		return stopped(err, "nothing was written")
	}
	if *out == "" || *out == "-" {
		if err := transcript.Export(ctx, cs.svc, id, e.stdout); err != nil {
			return stopped(err, "the output is incomplete")
		}
		return nil
	}
	err = writeFileAtomic(*out, func(w io.Writer) error { return transcript.Export(ctx, cs.svc, id, w) })
	if err != nil {
		return stopped(err, *out+" was not written (an export replaces it only once complete)")
	}
	fmt.Fprintf(e.stderr, "Exported %s to %s.\n", id, *out)
	return nil
}

// writeFileAtomic writes path through a temporary file in the same directory that replaces it
// only once it is complete and synced, so an interrupted export never leaves half a file.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // best effort: the data itself is synced
		d.Close()
	}
	return nil
}
