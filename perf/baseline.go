package perf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/npuverify/npuverify/safefile"
)

// MaxBaselineBytes caps the size of a baseline file (an earlier `check
// --json`): the report of the whole embedded store is a small fraction of
// it, and a file past it is not one.
const MaxBaselineBytes = 256 << 20

// Baseline is the kernel times of an earlier run, by case ID.
type Baseline struct {
	// Path is where it was read from.
	Path string
	// Times are each case's kernel times; a case the run judged without
	// times has an empty entry, a case it did not run has none.
	Times map[string][]float64
}

// ReadBaseline reads the kernel times of every case of an earlier `check
// --json` report: {"cases": [{"id": ..., "kernel_seconds": [...]}, ...]}
// (other fields are the report's and are ignored). It fails on a file
// larger than MaxBaselineBytes or not a regular file, on JSON that is not
// such a report, a case without an id or with one seen before, and on a
// time that is negative (the exec protocol allows 0), naming the case and
// index.
func ReadBaseline(path string) (*Baseline, error) {
	b, err := safefile.ReadFile(path, MaxBaselineBytes)
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", path, err)
	}
	bl, err := parseBaseline(b)
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", path, err)
	}
	bl.Path = path
	return bl, nil
}

func parseBaseline(b []byte) (*Baseline, error) {
	var doc struct {
		Cases *[]struct {
			ID            *string   `json:"id"`
			KernelSeconds []float64 `json:"kernel_seconds"`
		} `json:"cases"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a npuverify JSON report: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON report")
	}
	if doc.Cases == nil {
		return nil, errors.New(`no "cases": not a npuverify JSON report (write one with check --json)`)
	}
	bl := &Baseline{Times: map[string][]float64{}}
	for i, c := range *doc.Cases {
		if c.ID == nil || *c.ID == "" {
			return nil, fmt.Errorf("cases[%d]: no id", i)
		}
		id := *c.ID
		if _, dup := bl.Times[id]; dup {
			return nil, fmt.Errorf("cases[%d]: case %s appears twice", i, id)
		}
		for j, v := range c.KernelSeconds {
			if !(v >= 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("case %s: kernel_seconds[%d] = %v: not a finite duration ≥ 0", id, j, v)
			}
		}
		bl.Times[id] = c.KernelSeconds
	}
	return bl, nil
}
