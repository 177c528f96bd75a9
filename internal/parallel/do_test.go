package parallel

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// withProcs runs fn with GOMAXPROCS set to p.
func withProcs(p int, fn func()) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(p))
	fn()
}

func TestDoCallsEachOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		// 300 parts overflow the queue: the rest run on the caller.
		for _, n := range []int{0, 1, 2, 3, 7, 300} {
			withProcs(procs, func() {
				seen := make([]atomic.Int32, n)
				Do(n, func(i int) { seen[i].Add(1) })
				for i := range seen {
					if c := seen[i].Load(); c != 1 {
						t.Errorf("GOMAXPROCS=%d: Do(%d): work(%d) called %d times, want 1", procs, n, i, c)
					}
				}
			})
		}
	}
}

// TestDoNested runs Do inside Do three deep, more parts than cores at
// every level: every leaf runs once, and no level waits forever for a part
// that no goroutine is free to take.
func TestDoNested(t *testing.T) {
	withProcs(2, func() {
		var leaves atomic.Int32
		done := make(chan struct{})
		go func() {
			defer close(done)
			Do(3, func(int) {
				Do(3, func(int) {
					Do(3, func(int) { leaves.Add(1) })
				})
			})
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("GOMAXPROCS=2: Do(3) nested three deep: not done after a minute (%d of 27 leaves ran)", leaves.Load())
		}
		if got := leaves.Load(); got != 27 {
			t.Errorf("GOMAXPROCS=2: Do(3) nested three deep: %d leaves ran, want 27", got)
		}
	})
}

// TestDoRunsConcurrently holds work(0) until work(1) has run: with two
// cores a helper must take work(1) while the caller is still in work(0).
// (Real work calls must not wait for one another; this one does only to
// show that the parts do not run one after another.)
func TestDoRunsConcurrently(t *testing.T) {
	withProcs(2, func() {
		for round := range 20 {
			ran := make(chan struct{})
			Do(2, func(i int) {
				if i == 1 {
					close(ran)
					return
				}
				select {
				case <-ran:
				case <-time.After(time.Minute):
					t.Fatalf("GOMAXPROCS=2: Do(2) round %d: work(1) did not run within a minute of work(0): the parts ran one after another", round)
				}
			})
			// Rounds back to back find the helper polling; the pauses
			// find it parked.
			if round%2 == 1 {
				time.Sleep(2 * spinFor)
			}
		}
	})
}

// TestDoSeesHelpersWrites reads, after Do returns, what every part
// wrote: Do's return is ordered after every part's end (go test -race).
func TestDoSeesHelpersWrites(t *testing.T) {
	withProcs(4, func() {
		for n := 2; n <= 8; n++ {
			out := make([]int, n)
			Do(n, func(i int) { out[i] = i + 1 })
			for i, v := range out {
				if v != i+1 {
					t.Errorf("GOMAXPROCS=4: Do(%d): out[%d] = %d after return, want %d", n, i, v, i+1)
				}
			}
		}
	})
}

// busy spins for d: work that holds its core, as a loop's part does.
func busy(d time.Duration) {
	for t0 := time.Now(); time.Since(t0) < d; {
	}
}

// BenchmarkForkJoin is one loop of two equal parts, then a serial gap
// (none, or 50 µs), over and over: with a goroutine started for the
// second part (the anchor, as the loops did before Do) and with Do. On
// two cores a part's time per op is what the cores cannot hide: ideally
// part + gap.
func BenchmarkForkJoin(b *testing.B) {
	goroutines := func(work func(int)) {
		var wg sync.WaitGroup
		wg.Go(func() { work(1) })
		work(0)
		wg.Wait()
	}
	do := func(work func(int)) { Do(2, work) }
	for _, part := range []time.Duration{20 * time.Microsecond, 100 * time.Microsecond, 500 * time.Microsecond} {
		for _, gap := range []time.Duration{0, 50 * time.Microsecond} {
			for _, how := range []struct {
				name string
				run  func(func(int))
			}{{"goroutines", goroutines}, {"Do", do}} {
				b.Run(fmt.Sprintf("%s/part=%v/gap=%v", how.name, part, gap), func(b *testing.B) {
					for b.Loop() {
						how.run(func(int) { busy(part) })
						busy(gap)
					}
				})
			}
		}
	}
}
