//go:build unix

package http11

import (
	"errors"
	"net"
	"syscall"
)

// probes: quiet can look at a socket without blocking.
const probes = true

// quiet reports whether nothing is waiting to be read on nc, neither data
// nor the server's close: one non-blocking read (Go's sockets are
// non-blocking), which finds EAGAIN on a connection that is still open.
func quiet(nc net.Conn, buf []byte) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	err = rc.Read(func(fd uintptr) bool {
		_, rerr := syscall.Read(int(fd), buf)
		open = errors.Is(rerr, syscall.EAGAIN)
		return true // done, whatever the answer: do not wait for data
	})
	return err == nil && open
}
