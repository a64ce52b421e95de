//go:build windows

package ftsindex

import (
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// getThreadTimes is kernel32's GetThreadTimes, which x/sys/windows does not wrap.
var getThreadTimes = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetThreadTimes")

// threadCPU is the calling thread's user + kernel CPU time so far.
func threadCPU() time.Duration {
	var c, e, k, u windows.Filetime
	getThreadTimes.Call(uintptr(windows.CurrentThread()), uintptr(unsafe.Pointer(&c)), uintptr(unsafe.Pointer(&e)),
		uintptr(unsafe.Pointer(&k)), uintptr(unsafe.Pointer(&u)))
	return filetimeDuration(k) + filetimeDuration(u)
}

// cpuTime is the process's user + kernel CPU time so far.
func cpuTime() time.Duration {
	var c, e, k, u windows.Filetime
	windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &k, &u)
	return filetimeDuration(k) + filetimeDuration(u)
}

// filetimeDuration is a FILETIME that counts a duration (100 ns units).
func filetimeDuration(f windows.Filetime) time.Duration {
	return time.Duration(uint64(f.HighDateTime)<<32|uint64(f.LowDateTime)) * 100
}
