package parallel

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Why the loops do not start goroutines of their own. A goroutine started
// for a loop's part (go, or a WaitGroup's Go) lands on an idle core only
// once the runtime has woken a parked thread for it, and on the virtual
// machines this project runs on that takes about 100 µs: two 100 µs halves
// took 205 µs, as long as on one core, and a 500 µs pair 620 µs
// (BenchmarkForkJoin's "goroutines", 2026-12-06). A GEMM reference that
// splits each block of rows over the cores four times a block paid it
// dozens of times a run. Do hands its parts to helper goroutines that,
// after each part, keep polling for the next one for spinFor before they
// park, and it waits for its own parts polling for as long: loops that
// follow one another within spinFor find the other cores awake (the same
// pairs: 102 and 507 µs).

// spinFor is how long a helper polls for the next part, and Do for its
// parts to finish, before parking: about what waking a parked thread
// costs. Polling for as long as the wake-up it may save is at worst twice
// the cost of knowing when the next part comes (the ski-rental bound), and
// on the whole gemm 1024³ run 20 µs already took most of the gain, 100–200
// µs the rest (1 ms no more).
const spinFor = 100 * time.Microsecond

// A part is one call work(i) of a Do, run once by whichever goroutine
// takes it first: the helper it was handed to, or the calling goroutine
// once its own part is done.
type part struct {
	state atomic.Int32 // pending, running, done
	run   func()
	g     *group
}

// A part's states.
const (
	pending int32 = iota
	running
	done
)

// group is one Do's parts in flight: left counts them down for the
// caller's polling, wg for its parking.
type group struct {
	left atomic.Int32
	wg   sync.WaitGroup
}

// do runs p unless another goroutine has taken it, and reports whether it
// did.
func (p *part) do() bool {
	if !p.state.CompareAndSwap(pending, running) {
		return false
	}
	p.run()
	p.run = nil // a done part still in a helper's mail keeps no closure alive
	p.state.Store(done)
	p.g.left.Add(-1)
	p.g.wg.Done()
	return true
}

// A helper runs the parts handed to it, one at a time, for the life of
// the process.
type helper struct {
	// mail is the part handed to the helper: nil, or a part it has not
	// yet run or dropped. A done part in it may be replaced by a new one
	// (hand); the helper clears only the part it took.
	mail atomic.Pointer[part]
	wake chan struct{} // a token after each hand, for a parked helper
}

// loop runs the parts as they come.
func (h *helper) loop() {
	for {
		p := h.next()
		p.do()
		h.mail.CompareAndSwap(p, nil)
	}
}

// next returns the part in the mail, polling for spinFor before it
// parks until a hand wakes it.
func (h *helper) next() *part {
	deadline := time.Now().Add(spinFor)
	for {
		if p := h.mail.Load(); p != nil {
			return p
		}
		if time.Now().After(deadline) {
			<-h.wake
			deadline = time.Now().Add(spinFor)
			continue
		}
		runtime.Gosched()
	}
}

var (
	helpersMu sync.Mutex
	// helpers is every helper started, one fewer than the most cores a
	// Do was to use; it only grows (under helpersMu).
	helpers atomic.Pointer[[]*helper]
)

// startHelpers makes sure at least n helpers run, and returns them all
// (the first n are always the same ones).
func startHelpers(n int) []*helper {
	if hs := helpers.Load(); hs != nil && len(*hs) >= n {
		return *hs
	}
	helpersMu.Lock()
	defer helpersMu.Unlock()
	var hs []*helper
	if p := helpers.Load(); p != nil {
		hs = *p
	}
	for len(hs) < n {
		h := &helper{wake: make(chan struct{}, 1)}
		go h.loop()
		hs = append(slices.Clip(hs), h)
	}
	helpers.Store(&hs)
	return hs
}

// hand gives p to the first of hs that is free (its mail empty, or
// holding a done part), and wakes it in case it is parked; it reports
// whether one was free.
func hand(hs []*helper, p *part) bool {
	for _, h := range hs {
		old := h.mail.Load()
		if (old == nil || old.state.Load() == done) && h.mail.CompareAndSwap(old, p) {
			select {
			case h.wake <- struct{}{}:
			default:
			}
			return true
		}
	}
	return false
}

// Do calls work(0), …, work(n−1), on at most GOMAXPROCS goroutines at
// once, and returns when all have returned. work(0) runs on the calling
// goroutine, each other call on the helper it was handed to, or on the
// calling goroutine after work(0) when no helper was free or none has
// started it by then: so the calls must not wait for one another (a
// cooperative launch's blocks do, and start goroutines of their own), and
// a Do inside a work call cannot deadlock. A panic in a call on a helper
// ends the program, as it does in a goroutine of the caller's own.
func Do(n int, work func(i int)) {
	if n <= 1 {
		if n == 1 {
			work(0)
		}
		return
	}
	w := min(n, runtime.GOMAXPROCS(0)) - 1 // helpers to hand parts to
	hs := startHelpers(w)[:w]
	g := &group{}
	g.left.Store(int32(n - 1))
	g.wg.Add(n - 1)
	ps := make([]*part, n-1)
	for i := range ps {
		ps[i] = &part{run: func() { work(i + 1) }, g: g}
		hand(hs, ps[i])
	}
	work(0)
	for _, p := range ps {
		p.do()
	}
	deadline := time.Now().Add(spinFor)
	for g.left.Load() > 0 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	g.wg.Wait()
}
