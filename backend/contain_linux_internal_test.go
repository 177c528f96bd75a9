//go:build linux

package backend

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// The tracker's last scan, held to races that a real machine shows only
// now and then: CI once saw a grandchild of setsid_orphan.sh outlive the
// case (about one run in fifty of a kernel that orphans it as it exits).
// Each scenario is a table of processes and the moment it changes.

// fakeProc is one process of a fakeTable.
type fakeProc struct {
	proc
	env      string // "" for an environment that reads as empty
	children []int
}

// fakeTable is a procTable of scripted processes. onStat runs once, the
// first time its pid is read: a process that changes while the scan looks.
// afterStat runs once, just after its pid is first read: a change the
// reader's copy does not show. A pid in slow ignores its first SIGKILL (a
// process that takes a while to die).
type fakeTable struct {
	self      int
	procs     map[int]*fakeProc
	onStat    map[int]func()
	afterStat map[int]func()
	slow      map[int]bool
	killed    []int
	scans     int // reads of the harness's children
}

func (f *fakeTable) stat(pid int) (proc, bool) {
	if do := f.onStat[pid]; do != nil {
		delete(f.onStat, pid)
		do()
	}
	p, ok := f.procs[pid]
	if do := f.afterStat[pid]; do != nil {
		delete(f.afterStat, pid)
		defer do()
	}
	if !ok {
		return proc{}, false
	}
	return p.proc, true
}

func (f *fakeTable) children(pid int) []int {
	if pid == f.self {
		f.scans++
	}
	if p, ok := f.procs[pid]; ok {
		return slices.Clone(p.children)
	}
	return nil
}

func (f *fakeTable) env(pid int, kv string) (bool, bool) {
	p, ok := f.procs[pid]
	if !ok || p.env == "" {
		return false, true
	}
	return p.env == kv, false
}

func (f *fakeTable) kill(p proc) {
	if q, ok := f.procs[p.pid]; ok && q.start == p.start && q.state != 'Z' {
		f.killed = append(f.killed, p.pid)
		if f.slow[p.pid] {
			delete(f.slow, p.pid)
			return
		}
		f.exit(p.pid)
	}
}

func (f *fakeTable) reap(pid int) bool {
	p, ok := f.procs[pid]
	if !ok || p.state != 'Z' {
		return false
	}
	parent := f.procs[p.ppid]
	parent.children = slices.DeleteFunc(parent.children, func(c int) bool { return c == pid })
	delete(f.procs, pid)
	return true
}

// exit makes pid a zombie and hands its children to the harness, the
// subreaper.
func (f *fakeTable) exit(pid int) {
	p := f.procs[pid]
	p.state = 'Z'
	for _, c := range p.children {
		f.procs[c].ppid = f.self
		f.procs[f.self].children = append(f.procs[f.self].children, c)
	}
	p.children = nil
}

// orphanTable is the moment setsid_orphan.sh's kernel (pid 10) has exited,
// unreaped: its setsid shell (20), handed to the harness (1), still has the
// grandchild sleep (30) that holds the case's marker; the shell's
// environment reads as empty, as an exiting process's does. Another
// command of the harness (40) runs with its own marker, a child the
// harness started before the command (50) has no environment at all, and
// one in a session of its own (60) has exited, for the program that
// started it to reap.
func orphanTable() *fakeTable {
	const marker = "NPUVERIFY_CASE=/w/1/case.json"
	return &fakeTable{self: 1, onStat: map[int]func(){}, procs: map[int]*fakeProc{
		1:  {proc: proc{pid: 1, sid: 1, state: 'S', start: 1}, children: []int{10, 20, 40, 50, 60}},
		10: {proc: proc{pid: 10, ppid: 1, pgid: 10, sid: 1, state: 'Z', start: 100}, env: marker},
		20: {proc: proc{pid: 20, ppid: 1, pgid: 20, sid: 20, state: 'R', start: 101}, children: []int{30}},
		30: {proc: proc{pid: 30, ppid: 20, pgid: 20, sid: 20, state: 'S', start: 102}, env: marker},
		40: {proc: proc{pid: 40, ppid: 1, pgid: 40, sid: 1, state: 'S', start: 103}, env: "NPUVERIFY_CASE=/w/2/case.json"},
		50: {proc: proc{pid: 50, ppid: 1, pgid: 50, sid: 1, state: 'S', start: 50}},
		60: {proc: proc{pid: 60, ppid: 1, pgid: 60, sid: 60, state: 'Z', start: 104}},
	}}
}

func TestTrackerLastScan(t *testing.T) {
	const marker = "NPUVERIFY_CASE=/w/1/case.json"
	for _, tc := range []struct {
		name string
		// setup changes the table: the moment the shell exits.
		setup func(f *fakeTable) (killGroup func())
	}{
		{
			// The shell's memory, and so its environment, is gone while its
			// children are not handed over yet: the scan can neither take
			// nor rule it out, and must look again.
			name: "shell exiting, environment unreadable, as the scan starts",
			setup: func(f *fakeTable) func() {
				return func() { f.exit(20) }
			},
		},
		{
			// The harness's children were read while the shell ran; it is a
			// zombie when looked at, and its child was handed over after the
			// read: only a second read of the harness's children finds it.
			name: "shell exits between the read of the harness's children and its own",
			setup: func(f *fakeTable) func() {
				f.onStat[20] = func() { f.exit(20) }
				return func() {}
			},
		},
		{
			name: "shell already a zombie, grandchild already handed over",
			setup: func(f *fakeTable) func() {
				f.exit(20)
				return func() {}
			},
		},
	} {
		f := orphanTable()
		killGroup := tc.setup(f)
		tr := newTracker(f, 1, 10, marker)
		tr.kill(killGroup)
		if !slices.Equal(f.killed, []int{30}) {
			t.Errorf("tracker of command 10: kill() with %s: killed %v, want [30] (the grandchild, not the other command 40 nor the older child 50)", tc.name, f.killed)
		}
		// A settled kill takes at most four updates here (the first, one
		// after the shell's exit, one that kills the grandchild, one that
		// reaps it), each reading the harness's children at most
		// maxAdoptPasses+1 times; the older child without an environment,
		// taken for an exiting orphan, would hold the scan for killWait
		// (some 1000 reads).
		if most := 4 * (maxAdoptPasses + 1); f.scans > most {
			t.Errorf("tracker of command 10: kill() with %s: read the harness's children %d times, want at most %d", tc.name, f.scans, most)
		}
		if _, ok := f.procs[30]; ok {
			t.Errorf("tracker of command 10: kill() with %s: grandchild 30 left unreaped, want it reaped", tc.name)
		}
		// The shell leads the grandchild's session: an exited child of the
		// harness that is the command's, though never a member.
		if _, ok := f.procs[20]; ok {
			t.Errorf("tracker of command 10: kill() with %s: setsid shell 20 left a zombie, want it reaped", tc.name)
		}
		for _, pid := range []int{40, 50, 60} {
			if _, ok := f.procs[pid]; !ok {
				t.Errorf("tracker of command 10: kill() with %s: reaped or killed %d, not the command's, want it left alone", tc.name, pid)
			}
		}
	}
}

// TestTrackerReapsLateOrphan: the kill's SIGKILLs end a running setsid
// shell (20) and its child (30) together; the child dies first, a zombie
// of the shell, and the shell, slower to die, hands it to the harness just
// after the scan has read the child. That scan's copy still names the
// shell as the child's parent: the harness cannot reap it yet, but must
// not stop until it has (CI saw the child left a zombie of the harness,
// once in 300 runs of orphan_at_exit.sh). The scan reads the members in
// map order, so the race needs the child read before the shell: 64
// trials make missing it about 2^-64 likely.
func TestTrackerReapsLateOrphan(t *testing.T) {
	const marker = "NPUVERIFY_CASE=/w/1/case.json"
	for trial := range 64 {
		f := orphanTable()
		f.procs[20].env, f.procs[20].state = marker, 'S'
		f.afterStat = map[int]func(){}
		f.slow = map[int]bool{20: true}
		tr := newTracker(f, 1, 10, marker)
		// The first scan finds both running; the kill ends the child (a
		// zombie of the shell) but not the shell yet. The next read of
		// the child lets the shell finish dying.
		tr.update()
		f.kill(f.procs[30].proc)
		f.kill(f.procs[20].proc)
		f.afterStat[30] = func() { f.exit(20) }
		tr.kill(func() {})
		if _, ok := f.procs[30]; ok {
			t.Fatalf("tracker of command 10, trial %d: kill() with the grandchild 30 handed over after the scan read it: left it a zombie (ppid %d), want it reaped", trial, f.procs[30].ppid)
		}
		if _, ok := f.procs[20]; ok {
			t.Fatalf("tracker of command 10, trial %d: kill(): setsid shell 20 left a zombie, want it reaped", trial)
		}
	}
}

// TestEnvHoldsWholeEnvironment reads the environment of a real child
// process whose marker sits at the end of 200 KiB of variables: past the
// first buffer, so envHolds must read it again whole; and the same child
// for a marker it does not hold.
func TestEnvHoldsWholeEnvironment(t *testing.T) {
	const marker = "NPUVERIFY_CASE=/w/envholds/case.json"
	env := []string{"PATH=/usr/bin:/bin"}
	for i := range 200 {
		env = append(env, fmt.Sprintf("FILLER_%03d=%s", i, strings.Repeat("x", 1000)))
	}
	env = append(env, marker)
	cmd := exec.Command("sleep", "30")
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep command: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// The child is ours from Start on, but its environment is there only
	// once its execve is done: wait for a non-empty read.
	deadline := time.Now().Add(5 * time.Second)
	for {
		holds, empty := envHolds(cmd.Process.Pid, marker)
		if !empty {
			if !holds {
				t.Fatalf("envHolds(pid %d, %q) with the marker after 200 KiB of variables = false, want true", cmd.Process.Pid, marker)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("envHolds(pid %d): environment still empty after 5 s", cmd.Process.Pid)
		}
		time.Sleep(time.Millisecond)
	}
	if holds, empty := envHolds(cmd.Process.Pid, "NPUVERIFY_CASE=/w/other/case.json"); holds || empty {
		t.Errorf("envHolds(pid %d, another case's marker) = %v, %v, want false, false", cmd.Process.Pid, holds, empty)
	}
}
