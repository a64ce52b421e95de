//go:build unix

package main

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	sc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fl int
	var ferr error
	sc.Control(func(fd uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		fl, ferr = int(r), nil
		if e != 0 {
			ferr = e
		}
	})
	if ferr != nil {
		t.Fatal(ferr)
	}
	return fl&syscall.O_NONBLOCK != 0
}

func TestPollableStdin(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	// os.Pipe's ends are non-blocking, so the runtime polls them already: left as they are.
	if in, restore := pollableStdin(pr); in != io.Reader(pr) {
		t.Fatal("a non-blocking pipe was replaced")
	} else {
		restore()
	}
	// Blocking, as an inherited stdin is (Fd puts the descriptor in blocking mode).
	if err := syscall.SetNonblock(int(pr.Fd()), false); err != nil {
		t.Fatal(err)
	}
	in, restore := pollableStdin(pr)
	if in == io.Reader(pr) {
		t.Fatal("a pipe was not made pollable")
	}
	if _, err := pw.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(in, buf); err != nil || string(buf) != "line\n" {
		t.Fatalf("read %q, %v", buf, err)
	}
	// A read still waiting when serving ends (a signal) is ended by restore, not left blocked.
	readErr := make(chan error, 1)
	go func() {
		_, err := in.Read(buf)
		readErr <- err
	}()
	time.Sleep(20 * time.Millisecond)
	restore()
	select {
	case err := <-readErr:
		if err == nil {
			t.Fatal("the waiting read returned data")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a read waiting on stdin was not ended by restore")
	}
	if nonblocking(t, pr) {
		t.Fatal("stdin left non-blocking after serving")
	}
	// The original descriptor is still open and readable.
	pw.Write([]byte("x"))
	if _, err := io.ReadFull(pr, buf[:1]); err != nil || buf[0] != 'x' {
		t.Fatalf("original stdin after restore: %q, %v", buf[:1], err)
	}

	// A regular file (or a terminal) is left alone.
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if in, restore := pollableStdin(f); in != io.Reader(f) {
		t.Fatal("a regular file was replaced")
	} else {
		restore()
	}
}
