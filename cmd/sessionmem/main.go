package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/sessionmem/sessionmem/redact"
)

func main() {
	ctx, stop := notifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(redactingWriter(os.Stderr, os.Getenv), "sessionmem:", err)
		}
		os.Exit(exitCode(err))
	}
}

// env bundles the process's streams and environment so commands are testable in process.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// command is one subcommand. run receives the arguments after the command name.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

// errUsage marks an error whose message was already printed with the usage text.
var errUsage = errors.New("usage")

// exitCode is the process's exit code for a command's error: 2 bad usage, 128+N a command
// stopped by signal N (130 for Ctrl-C), 1 any other failure.
func exitCode(err error) int {
	var ie *interruptedError
	switch {
	case errors.Is(err, errUsage), errors.Is(err, errBadUsage):
		return 2
	case errors.As(err, &ie):
		return ie.exitCode()
	}
	return 1
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	e.stderr = redactingWriter(stderr, e.getenv)
	return dispatch(ctx, e, args)
}

func dispatch(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		usage(e.stderr)
		return errUsage
	}
	name := args[0]
	if name == "--version" || name == "-version" {
		name = "version"
	}
	if name == "-h" || name == "--help" || name == "help" {
		usage(e.stdout)
		return nil
	}
	for _, c := range commands() {
		if c.name == name {
			return asInterrupted(ctx, name, c.run(ctx, e, args[1:]))
		}
	}
	fmt.Fprintf(e.stderr, "sessionmem: unknown command %q\n\n", name)
	usage(e.stderr)
	return errUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: sessionmem <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'sessionmem <command> --help' for a command's flags.")
}

// redactingWriter returns w behind the redactor the store uses (built-in rules plus valid
// SESSIONMEM_REDACT_PATTERNS), so that nothing a command prints on stderr (errors that quote
// an argument, logs, warnings) carries a secret. Each Write is redacted on its own; every
// writer of stderr here writes whole messages.
func redactingWriter(w io.Writer, getenv func(string) string) io.Writer {
	var patterns []string
	if raw := getenv(envRedact); raw != "" {
		_ = json.Unmarshal([]byte(raw), &patterns) // a bad value is reported by the command
	}
	r, err := redact.New(patterns)
	if err != nil {
		r, _ = redact.New(nil)
	}
	return &redactWriter{w: w, r: r}
}

type redactWriter struct {
	w io.Writer
	r *redact.Redactor
}

func (rw *redactWriter) Write(p []byte) (int, error) {
	if _, err := rw.w.Write(rw.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
