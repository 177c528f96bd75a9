//go:build linux

package backend

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Kernel containment on Linux.
//
// Killing the command's process group misses descendants that left it
// (setsid, setpgid). The harness therefore makes itself a child subreaper:
// a descendant orphaned by the command's exit is adopted by the harness
// rather than by init, so it stays findable and the harness can reap it.
// While a command runs, a tracker follows its processes through /proc:
// every child of a followed process, and every child of the harness (an
// adopted orphan) that is in the command's process group or whose
// environment holds this case's NPUVERIFY_CASE. At the end of the run (or
// on timeout, cancellation, Close) the followed processes are killed with
// SIGKILL through a pidfd after their start time is checked (so a reused
// process id is never signalled), until none is left, and the adopted ones
// are reaped. A descendant that both clears its environment and leaves
// the command's tree between two scans (scanInterval) can still escape;
// a cgroup would close that gap but needs privileges the harness may not
// have.

// scanInterval is how often the command's processes are looked up while
// it runs: often enough to see a process before a short-lived parent
// between it and the command exits; each look-up reads a few /proc files
// per process of the command.
const scanInterval = 50 * time.Millisecond

// killWait bounds how long kill waits for SIGKILLed processes to die (a
// process in uninterruptible sleep dies when its I/O ends).
const killWait = 5 * time.Second

var subreaperOnce sync.Once

// enableSubreaper makes this process a child subreaper, once. Should the
// prctl fail (a seccomp filter), orphans go to init as before: the
// tracker still kills every descendant it has seen.
func enableSubreaper() {
	subreaperOnce.Do(func() {
		unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	})
}

// proc is one line of /proc/PID/stat, the fields used here.
type proc struct {
	pid, ppid, pgid int
	state           byte
	start           uint64 // clock ticks after boot: with pid, identifies the process
}

// readSmall reads a small /proc file with plain system calls (os.ReadFile
// costs several more per file, and a scan reads many).
func readSmall(path string, buf []byte) []byte {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if m <= 0 || err != nil {
			break
		}
		n += m
	}
	return buf[:n]
}

// readProc parses /proc/PID/stat.
func readProc(pid int) (proc, bool) {
	var buf [1024]byte
	b := readSmall("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice threads
	// itrealvalue starttime ...; comm may hold anything but ends at the
	// last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return proc{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 20 {
		return proc{}, false
	}
	p := proc{pid: pid, state: f[0][0]}
	p.ppid, _ = strconv.Atoi(string(f[1]))
	p.pgid, _ = strconv.Atoi(string(f[2]))
	p.start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	return p, true
}

// children returns the children of process pid, from the children file
// of each of its threads (a child belongs to the thread that forked it,
// an adopted orphan to the thread the kernel chose).
func children(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	tids, _ := d.Readdirnames(-1)
	d.Close()
	var out []int
	buf := make([]byte, 4096)
	for _, tid := range tids {
		for _, f := range bytes.Fields(readSmall(dir+"/"+tid+"/children", buf)) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// hasEnv reports whether process pid's initial environment holds kv.
func hasEnv(pid int, kv string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, e := range bytes.Split(b, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// tracker follows the processes of one command.
type tracker struct {
	root   int    // the command; reaped by its exec.Cmd, never here
	marker string // NPUVERIFY_CASE=... of this run
	self   int

	mu      sync.Mutex
	members map[int]uint64 // pid → start time
}

// trackers are the running commands' trackers; one goroutine scans for
// all of them while there are any.
var trackers struct {
	mu      sync.Mutex
	set     map[*tracker]bool
	running bool
}

// track starts following the command root and its descendants.
func track(root int, marker string) *tracker {
	t := &tracker{root: root, marker: marker, self: os.Getpid(), members: map[int]uint64{}}
	if p, ok := readProc(root); ok {
		t.members[root] = p.start
	}
	trackers.mu.Lock()
	defer trackers.mu.Unlock()
	if trackers.set == nil {
		trackers.set = map[*tracker]bool{}
	}
	trackers.set[t] = true
	if !trackers.running {
		trackers.running = true
		go scanLoop()
	}
	return t
}

// scanLoop scans /proc for every tracker until none is left.
func scanLoop() {
	for {
		time.Sleep(scanInterval)
		trackers.mu.Lock()
		if len(trackers.set) == 0 {
			trackers.running = false
			trackers.mu.Unlock()
			return
		}
		ts := make([]*tracker, 0, len(trackers.set))
		for t := range trackers.set {
			ts = append(ts, t)
		}
		trackers.mu.Unlock()
		for _, t := range ts {
			t.update()
		}
	}
}

// update adds the command's processes (the descendants of the command
// and of every member; the harness's own children in the command's
// process group or with this case's NPUVERIFY_CASE, and their
// descendants), drops members that are gone, and reaps adopted members
// that have exited. It returns the members that are alive. Its cost is in
// proportion to the command's processes and the harness's children, not
// to every process of the system.
func (t *tracker) update() []proc {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := map[int]proc{}
	var queue []int
	for pid, start := range t.members {
		if p, ok := readProc(pid); ok && p.start == start {
			seen[pid] = p
			queue = append(queue, pid)
		} else {
			delete(t.members, pid)
		}
	}
	for _, c := range children(t.self) {
		if _, ok := t.members[c]; ok {
			continue
		}
		p, ok := readProc(c)
		if ok && p.ppid == t.self && (p.pgid == t.root || p.state != 'Z' && hasEnv(c, t.marker)) {
			t.members[c], seen[c] = p.start, p
			queue = append(queue, c)
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children(pid) {
			if _, ok := t.members[c]; ok || c == t.self {
				continue
			}
			if p, ok := readProc(c); ok && p.ppid == pid {
				t.members[c], seen[c] = p.start, p
				queue = append(queue, c)
			}
		}
	}
	var alive []proc
	for pid := range t.members {
		p := seen[pid]
		if p.state != 'Z' {
			alive = append(alive, p)
			continue
		}
		if pid != t.root && p.ppid == t.self {
			// An adopted descendant that exited: reap it (it is ours, and
			// no one else waits for it).
			var ws unix.WaitStatus
			if n, _ := unix.Wait4(pid, &ws, unix.WNOHANG, nil); n == pid {
				delete(t.members, pid)
			}
		}
	}
	return alive
}

// kill scans once more (so that children of a still running command are
// seen before it dies), calls killGroup, then SIGKILLs every member until
// none is alive (or killWait has passed), reaping the adopted ones.
func (t *tracker) kill(killGroup func()) {
	alive := t.update()
	killGroup()
	deadline := time.Now().Add(killWait)
	for len(alive) > 0 && time.Now().Before(deadline) {
		for _, p := range alive {
			signal(p)
		}
		time.Sleep(5 * time.Millisecond)
		alive = t.update()
	}
}

// signal sends SIGKILL to p through a pidfd, after checking that the pid
// still names the process that was seen (same start time).
func signal(p proc) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	if now, ok := readProc(p.pid); !ok || now.start != p.start {
		return // the id names another process now
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		unix.Kill(p.pid, unix.SIGKILL) // pidfd_send_signal unavailable: the start time was checked just above
	}
}

// stop ends the tracking.
func (t *tracker) stop() {
	trackers.mu.Lock()
	delete(trackers.set, t)
	trackers.mu.Unlock()
}
