package harness_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/tensor"
)

// trimBackend counts the calls of Trim (backend.Trimmer).
type trimBackend struct {
	fakeBackend
	trims int
}

func (b *trimBackend) Trim() { b.trims++ }

// After a large case's run the harness has the backend drop what it keeps
// for later runs, and frees what a sync.Pool held at the run's end (which
// one collection only moves to the pool's victim cache); a small case is
// spared both.
func TestCollectIfLargeReleasesPools(t *testing.T) {
	for _, tt := range []struct {
		n         int
		wantTrims int
		wantFreed bool
	}{
		{n: 1 << 10},
		{n: 1 << 20, wantTrims: 1, wantFreed: true},
	} {
		b := &trimBackend{}
		in := map[string]*tensor.Tensor{"x": tensor.MustNew(tensor.Float16, tt.n)}
		var pool sync.Pool
		freed := make(chan struct{})
		v := new([64]byte)
		runtime.AddCleanup(v, func(ch chan struct{}) { close(ch) }, freed)
		pool.Put(v)
		v = nil
		harness.CollectIfLarge(b, in)
		// The cleanup runs soon after the collection that frees v; a small
		// case is not waited on for long.
		wait := 100 * time.Millisecond
		if tt.wantFreed {
			wait = 5 * time.Second
		}
		got := false
		select {
		case <-freed:
			got = true
		case <-time.After(wait):
		}
		if b.trims != tt.wantTrims || got != tt.wantFreed {
			t.Errorf("collectIfLarge(n=%d): %d Trim calls, pooled value freed %v; want %d, %v", tt.n, b.trims, got, tt.wantTrims, tt.wantFreed)
		}
		runtime.KeepAlive(&pool)
	}
}
