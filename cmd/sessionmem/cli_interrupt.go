package main

// Interrupted commands. Ctrl-C (SIGINT) or SIGTERM cancels main's context with a signalCause.
// A long command that stops on it returns interrupted(...): a plain sentence saying what it
// finished before it stopped, that what it stored is whole, and whether running it again
// continues, in place of a bare "context canceled"; the exit code is 128 + the signal's
// number, as a shell reports a process the signal killed (130 for Ctrl-C), so scripts tell an
// interruption from a failure.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// signalCause is the cause main's context is canceled with: the signal that arrived.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string { return c.sig.String() + " signal received" }

// Is makes the cause count as context.Canceled, as os/signal's own cause does.
func (c signalCause) Is(target error) bool { return target == context.Canceled }

// notifyContext is signal.NotifyContext with a cause that keeps the signal itself (the cause
// os/signal sets is unexported text), so the exit code can say which signal stopped the
// command. Like signal.NotifyContext, later signals are absorbed until stop is called: a
// command that is finishing its last write is not killed by a second Ctrl-C.
func notifyContext(parent context.Context, sigs ...os.Signal) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	go func() {
		select {
		case s := <-ch:
			cancel(signalCause{s})
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}

// interruptedError is a command stopped by a signal before it finished. Its text is the
// whole report (main prints it after "sessionmem: ").
type interruptedError struct {
	sig    os.Signal // nil when the context ended without a signal (tests): counted as SIGINT
	report string
}

func (e *interruptedError) Error() string { return e.report }

// exitCode is 128 + the signal number, the shell's convention for a process a signal ended.
func (e *interruptedError) exitCode() int {
	if s, ok := e.sig.(syscall.Signal); ok && s > 0 && s < 64 {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGINT)
}

// interrupted returns the error of a command that ctx stopped, its report made of format and
// a; nil while ctx is still live, so a command checks and words its report in one place:
//
//	if err := interrupted(ctx, "stats interrupted after %d of %d sessions; ...", i, n); err != nil {
//		return err
//	}
func interrupted(ctx context.Context, format string, a ...any) error {
	if ctx.Err() == nil {
		return nil
	}
	var sc signalCause
	errors.As(context.Cause(ctx), &sc)
	return &interruptedError{sig: sc.sig, report: fmt.Sprintf(format, a...)}
}

// asInterrupted turns a bare cancellation that a command returned after a signal into an
// interruptedError naming the command, so no command ends with only "context canceled";
// other errors pass unchanged. The long commands word their own reports; this covers the
// short ones (list, show, search), which only read.
func asInterrupted(ctx context.Context, name string, err error) error {
	var ie *interruptedError
	if err == nil || ctx.Err() == nil || !errors.Is(err, context.Canceled) || errors.As(err, &ie) {
		return err
	}
	return interrupted(ctx, "%s interrupted before it finished; run it again", name)
}

// confirm asks a yes/no question on stderr and reads the answer from stdin: only "y" or "yes"
// confirms. A signal while it waits ends the wait with an interruptedError (main's handler
// keeps Ctrl-C from ending the process, and a read from a terminal cannot be cancelled, so it
// is left behind in its goroutine; the process ends soon after). what names the action for
// that report ("delete sess-1").
func confirm(ctx context.Context, e *env, prompt, what string) (bool, error) {
	fmt.Fprint(e.stderr, prompt)
	answer := make(chan string, 1)
	go func() {
		a, _ := bufio.NewReader(e.stdin).ReadString('\n')
		answer <- a
	}()
	select {
	case a := <-answer:
		a = strings.ToLower(strings.TrimSpace(a))
		return a == "y" || a == "yes", nil
	case <-ctx.Done():
		fmt.Fprintln(e.stderr)
		return false, interrupted(ctx, "%s interrupted at the question: nothing was deleted", what)
	}
}
