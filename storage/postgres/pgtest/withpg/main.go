// Command withpg runs a command with a throwaway PostgreSQL database: it starts a cluster (as
// pgtest does for tests), creates a database, runs the command with $SESSIONMEM_PG_URL set to
// the database's URL, then removes the cluster and exits with the command's status.
//
//	go run ./storage/postgres/pgtest/withpg [--fsync] -- ./scripts/interop.sh --postgres
//
// scripts/interop.sh --postgres uses it; benchmarks use --fsync for realistic commit costs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

func main() {
	fsync := flag.Bool("fsync", false, "keep fsync on (for benchmarks)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: withpg [--fsync] -- command [args...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(flag.Args(), *fsync))
}

func run(argv []string, fsync bool) int {
	c, err := pgtest.Start(pgtest.Options{Fsync: fsync})
	if err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	defer c.Remove()
	_, url, err := c.CreateDatabase(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "SESSIONMEM_PG_URL="+url)
	// Forward interrupts to the command and let it finish, so the cluster is still removed.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	go func() {
		for s := range sig {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return max(ee.ExitCode(), 1)
	default:
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
}
