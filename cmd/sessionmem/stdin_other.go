//go:build !unix

package main

import "io"

// pollableStdin leaves stdin as it is where the poller does not serve pipes.
func pollableStdin(r io.Reader) (io.Reader, func()) { return r, func() {} }
