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
// are reaped, with any exited child of the harness that led one's session. That last scan goes on until it is settled: a child of the
// harness whose environment reads as empty is exiting (or inside an
// execve), and the children it is about to hand over may be the command's.
// A descendant that both clears its environment and leaves the command's
// tree between two scans (scanInterval) can still escape (after holding
// the last scan for killWait, as its environment stays empty); a cgroup
// would close that gap but needs privileges the harness may not have.

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
	pid, ppid, pgid, sid int
	state                byte
	start                uint64 // clock ticks after boot: with pid, identifies the process
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
	p.sid, _ = strconv.Atoi(string(f[3]))
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

// envHolds reports whether process pid's environment holds kv, and
// whether the environment read as empty. An empty read means a process
// that is exiting (its memory is gone before its children are handed to
// the harness), one between the two halves of an execve, or one started
// with no environment at all: only the last stays that way.
//
// The environment is read in one read(2), which the kernel serves from
// one memory image of the process, held for the call: in several reads
// (os.ReadFile's first is 512 bytes), an execve between two of them ended
// the file at the old image's first bytes, an environment that read as
// neither empty nor holding kv, and the process was ruled out for good
// (TestExecContainOrphanAtExitStress under load, the forked shell of
// `sleep 1000 &` in the middle of its execve). An environment that fills
// the buffer is read again into one twice the size.
func envHolds(pid int, kv string) (holds, empty bool) {
	path := "/proc/" + strconv.Itoa(pid) + "/environ"
	pb := envBufs.Get().(*[]byte)
	defer envBufs.Put(pb)
	for size := len(*pb); size <= 16<<20; size *= 2 {
		if len(*pb) < size {
			*pb = make([]byte, size)
		}
		buf := *pb
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, true
		}
		n, err := unix.Read(fd, buf)
		unix.Close(fd)
		if err != nil || n <= 0 {
			return false, true
		}
		if n == size {
			continue // perhaps cut short: read it whole
		}
		for _, e := range bytes.Split(buf[:n], []byte{0}) {
			if string(e) == kv {
				return true, false
			}
		}
		return false, false
	}
	return false, true // over 16 MiB: neither taken nor ruled out
}

// envBufs recycles envHolds's buffers (64 KiB, or more after a larger
// environment): a scan reads the environment of every new child of the
// harness, every scanInterval while a command runs.
var envBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// procTable is what a tracker reads of the system's processes and does to
// them: /proc, pidfds and wait4 (procfs); a scripted table in the tests,
// which hold the scan to the races a real machine shows only now and then.
type procTable interface {
	stat(pid int) (proc, bool)
	children(pid int) []int
	env(pid int, kv string) (holds, empty bool)
	kill(p proc)       // SIGKILL, unless the pid now names another process
	reap(pid int) bool // wait for an exited child without blocking
}

// procfs is the procTable of this machine.
type procfs struct{}

func (procfs) stat(pid int) (proc, bool)           { return readProc(pid) }
func (procfs) children(pid int) []int              { return children(pid) }
func (procfs) env(pid int, kv string) (bool, bool) { return envHolds(pid, kv) }
func (procfs) kill(p proc)                         { signal(p) }
func (procfs) reap(pid int) bool {
	var ws unix.WaitStatus
	n, _ := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	return n == pid
}

// tracker follows the processes of one command.
type tracker struct {
	procs  procTable
	root   int    // the command; reaped by its exec.Cmd, never here
	start  uint64 // the command's start time
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

// newTracker returns a tracker of the command root, run by self, that
// nothing scans yet.
func newTracker(procs procTable, self, root int, marker string) *tracker {
	t := &tracker{procs: procs, root: root, marker: marker, self: self, members: map[int]uint64{}}
	if p, ok := procs.stat(root); ok {
		t.members[root], t.start = p.start, p.start
	}
	return t
}

// track starts following the command root and its descendants.
func track(root int, marker string) *tracker {
	t := newTracker(procfs{}, os.Getpid(), root, marker)
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

// maxAdoptPasses bounds how often one update reads the harness's children
// again to find orphans handed to it while it looked (more passes than
// this mean other commands keep starting; kill scans again anyway).
const maxAdoptPasses = 4

// update adds the command's processes (the descendants of the command
// and of every member; the harness's own children in the command's
// process group or with this case's NPUVERIFY_CASE, and their
// descendants), drops members that are gone, and reaps adopted members
// that have exited. It returns the members that are alive, and whether
// the scan may have missed one: a child of the harness whose environment
// could not be read (exiting, or in the middle of an execve) is neither
// taken nor ruled out, and its own children reach the harness only when
// it has exited. Its cost is in proportion to the command's processes and
// the harness's children, not to every process of the system.
func (t *tracker) update() (alive []proc, unsettled bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := map[int]proc{}
	var queue []int
	for pid, start := range t.members {
		if p, ok := t.procs.stat(pid); ok && p.start == start {
			seen[pid] = p
			queue = append(queue, pid)
		} else {
			delete(t.members, pid)
		}
	}
	// The harness's children are read again after they are looked at: a
	// process seen exiting (or exited) may have handed its children to
	// the harness after the first read, and they are the orphans sought.
	looked := map[int]bool{}
	var zombies []int // exited children of the harness that are not members
	for pass := 0; ; pass++ {
		fresh := false
		for _, c := range t.procs.children(t.self) {
			if looked[c] {
				continue
			}
			looked[c], fresh = true, true
			if _, ok := t.members[c]; ok {
				continue
			}
			p, ok := t.procs.stat(c)
			if !ok || p.ppid != t.self {
				continue
			}
			if p.pgid == t.root {
				t.members[c], seen[c] = p.start, p
				queue = append(queue, c)
				continue
			}
			if p.state == 'Z' {
				zombies = append(zombies, c)
				continue
			}
			if holds, empty := t.procs.env(c, t.marker); holds {
				t.members[c], seen[c] = p.start, p
				queue = append(queue, c)
			} else if empty && p.start >= t.start {
				// Not one started before the command: that is no orphan of
				// it, and one with no environment at all would hold every
				// last scan for killWait.
				unsettled = true
			}
		}
		if !fresh {
			break
		}
		if pass == maxAdoptPasses {
			unsettled = true
			break
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range t.procs.children(pid) {
			if _, ok := t.members[c]; ok || c == t.self {
				continue
			}
			if p, ok := t.procs.stat(c); ok && p.ppid == pid {
				t.members[c], seen[c] = p.start, p
				queue = append(queue, c)
			}
		}
	}
	// An exited child of the harness that leads the session of a member
	// is of the command's tree: a session is only ever entered by fork
	// from inside it, and the command's are the harness's own (its group
	// only is its own) or ones its processes made with setsid. Such as the
	// setsid shell of a kernel, which exited before any scan saw it: its
	// children were found by their environment, it would stay a zombie.
	// Its pid cannot have been reused: it is unreaped.
	sessions := map[int]bool{}
	for pid := range t.members {
		sessions[seen[pid].sid] = true
	}
	for _, z := range zombies {
		if sessions[z] {
			t.procs.reap(z)
		}
	}
	for pid := range t.members {
		p := seen[pid]
		if p.state != 'Z' {
			alive = append(alive, p)
			continue
		}
		if pid == t.root {
			continue // its exec.Cmd reaps it
		}
		// An adopted descendant that exited: reap it (it is ours, and no
		// one else waits for it).
		if p.ppid == t.self && t.procs.reap(pid) {
			delete(t.members, pid)
			continue
		}
		// One the harness cannot reap yet is still a zombie of its parent,
		// a member, as this scan read it: that parent reaps it, or hands
		// it to the harness as it dies (perhaps since the read). Either
		// way a later scan finds it gone or the harness's.
		unsettled = true
	}
	return alive, unsettled
}

// kill scans once more (so that children of a still running command are
// seen before it dies), calls killGroup, then SIGKILLs every member until
// none is alive and the scan is settled (or killWait has passed), reaping
// the adopted ones. Waiting for a settled scan is what catches a
// grandchild whose parent exits as the command ends: it reaches the
// harness only after its parent's memory, and so its environment, is gone.
func (t *tracker) kill(killGroup func()) {
	alive, unsettled := t.update()
	killGroup()
	deadline := time.Now().Add(killWait)
	for (len(alive) > 0 || unsettled) && time.Now().Before(deadline) {
		for _, p := range alive {
			t.procs.kill(p)
		}
		time.Sleep(5 * time.Millisecond)
		alive, unsettled = t.update()
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
