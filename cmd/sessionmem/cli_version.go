package main

import (
	"context"
	"fmt"

	"github.com/sessionmem/sessionmem/internal/buildinfo"
)

func versionCommand() command {
	return command{name: "version", summary: "print the version, commit, its date and the Go version (also --version)", run: runVersion}
}

func runVersion(_ context.Context, e *env, args []string) error {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			fmt.Fprint(e.stdout, "Usage: sessionmem version\n\nPrint the version, the commit it was built from and that commit's date, and the Go version.\n")
			return nil
		}
		fmt.Fprintf(e.stderr, "sessionmem version: unexpected argument %q\n", args[0])
		return errUsage
	}
	fmt.Fprint(e.stdout, buildinfo.Read().String())
	return nil
}
