package benchkit

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// servicePID finds the local process listening on the port of the
// connection string's table endpoint (Azurite on loopback), so that a
// round can count the service's CPU beside the client's: when the service
// shares the machine, its CPU per entity bounds what any client can reach.
// 0 when the endpoint is not local or the process is not visible.
func servicePID(conn string) int {
	var endpoint string
	for _, kv := range strings.Split(conn, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, "TableEndpoint") {
			endpoint = v
		}
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Port() == "" {
		return 0
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		return 0
	}
	inode := ""
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			// sl local_address rem_address st … inode (field 9); 0A is LISTEN.
			if len(fs) < 10 || fs[3] != "0A" {
				continue
			}
			if _, p, ok := strings.Cut(fs[1], ":"); ok && p == fmt.Sprintf("%04X", port) {
				inode = fs[9]
			}
		}
	}
	if inode == "" {
		return 0
	}
	want := "socket:[" + inode + "]"
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && l == want {
			pid, _ := strconv.Atoi(strings.Split(fd, "/")[2])
			return pid
		}
	}
	return 0
}

// processCPUOf is the user and system CPU time of process pid so far
// (/proc/pid/stat, in clock ticks of 10 ms); 0 when unknown.
func processCPUOf(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	return cpuOfStat("/proc/" + strconv.Itoa(pid) + "/stat")
}

// mainThreadCPUOf is the user+system CPU of the process's main thread
// alone (its task whose id is the process's). Node.js runs all of an
// emulator's JavaScript on that thread; the others (the garbage
// collector's helpers, libuv's pool) only assist. So the main thread's
// CPU a message bounds the emulator's throughput at one core, whatever
// the machine's other cores do.
func mainThreadCPUOf(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	p := strconv.Itoa(pid)
	return cpuOfStat("/proc/" + p + "/task/" + p + "/stat")
}

// cpuOfStat reads utime+stime from a /proc stat file; 0 when unreadable.
func cpuOfStat(path string) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	// The command name may hold spaces: fields count from after its ')'.
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return 0
	}
	fs := strings.Fields(rest) // state is field 3 of stat, so utime (14) is fs[11]
	if len(fs) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(fs[11], 10, 64)
	st, _ := strconv.ParseInt(fs[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
