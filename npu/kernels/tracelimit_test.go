package kernels

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/npuverify/npuverify/npu"
)

// TestTraceLimit: a trace keeps at most its limit of events, drops the
// rest deterministically (the same events on every run, whatever the
// host's scheduling of the blocks), counts them, says so in the file,
// and what it keeps is still a valid schedule; under the default limit
// the same run drops nothing and keeps every span the limited one kept.
func TestTraceLimit(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	const n, seed, limit = 20000, 3, 25
	x, y := syncInputs(t, n, seed)
	traced := func(tr *npu.Trace) (int64, []byte) {
		t.Helper()
		_, cost, err := VectorAdd(npu.WithTrace(context.Background(), tr), dev, x, y, VectorAddOptions{BlockDim: 2, TileElems: 2048})
		if err != nil {
			t.Fatalf("vector_add n=%d seed=%d: %v", n, seed, err)
		}
		var buf bytes.Buffer
		if err := tr.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		return cost.Cycles, buf.Bytes()
	}
	full := npu.NewTrace()
	cycles, fullJSON := traced(full)
	if full.Dropped() != 0 || full.Cycles() != cycles || full.Launches() != 1 {
		t.Fatalf("default limit: dropped %d, cycles %d (launch %d), launches %d", full.Dropped(), full.Cycles(), cycles, full.Launches())
	}
	small := npu.NewTraceLimit(limit)
	_, smallJSON := traced(small)
	spans, flows, err := CheckTrace(smallJSON, cycles)
	if err != nil {
		t.Fatalf("limit %d: %v", limit, err)
	}
	fs, ff, _ := CheckTrace(fullJSON, cycles)
	if spans+flows != limit || small.Dropped() != int64(fs+ff-limit) {
		t.Errorf("limit %d: kept %d spans + %d flows, dropped %d; the whole trace has %d + %d", limit, spans, flows, small.Dropped(), fs, ff)
	}
	var meta struct {
		Other map[string]any `json:"otherData"`
	}
	if err := json.Unmarshal(smallJSON, &meta); err != nil || meta.Other["dropped_events"] != float64(small.Dropped()) {
		t.Errorf("limit %d: otherData %v (%v), want dropped_events %d", limit, meta.Other, err, small.Dropped())
	}
	kept := map[npu.TraceSpan]bool{}
	for _, s := range full.Spans() {
		kept[s] = true
	}
	for _, s := range small.Spans() {
		if !kept[s] {
			t.Errorf("limit %d kept %+v, which the whole trace lacks", limit, s)
		}
	}
	for range 3 {
		if _, again := traced(npu.NewTraceLimit(limit)); !bytes.Equal(again, smallJSON) {
			t.Fatalf("limit %d: two runs keep different events", limit)
		}
	}
}
