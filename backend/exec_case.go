package backend

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/safefile"
	"github.com/npuverify/npuverify/tensor"
)

// The case directory: what Run writes for the command (case.json, the
// inputs, the empty out directory) and how it is removed.

// ExecCaseFile is the content of D/case.json, for example
//
//	{
//	  "version": 1,
//	  "op": "gemm",
//	  "params": {"accumulate": "sequential", "alpha": "1", "beta": "0", "mode": "fp16_fp32acc"},
//	  "numerics": {"overflow": "inf", "subnormals": "keep", "int8_rounding": "half_even"},
//	  "inputs": [
//	    {"name": "a", "file": "a.npy", "dtype": "fp16", "shape": [64, 128]},
//	    {"name": "b", "file": "b.npy", "dtype": "fp16", "shape": [128, 32]}
//	  ],
//	  "outputs": [
//	    {"name": "out", "file": "out/out.npy", "dtype": "fp16", "shape": [64, 32]}
//	  ]
//	}
//
// Params are the op's validated params with every default filled in
// (ops.CompleteParams: decode_attention's scale as the decimal of
// RN32(1/√D) when unset), all as strings. Files are relative to D. Inputs and outputs are listed in the
// op's contract order; optional inputs that the case does not have are
// left out.
type ExecCaseFile struct {
	Version  int             `json:"version"`
	Op       string          `json:"op"`
	Params   ops.Params      `json:"params"`
	Numerics tensor.Numerics `json:"numerics"`
	Inputs   []ExecTensor    `json:"inputs"`
	Outputs  []ExecTensor    `json:"outputs"`
}

// ExecTensor describes one input or output file of an exec case.
type ExecTensor struct {
	Name  string       `json:"name"`
	File  string       `json:"file"` // relative to the case directory, slash-separated
	DType tensor.DType `json:"dtype"`
	Shape []int        `json:"shape"`
}

// newCaseFile describes the case: inputs and outputs in contract order,
// to be stored under num.
func newCaseFile(op ops.Op, p ops.Params, in map[string]*tensor.Tensor, num tensor.Numerics) (*ExecCaseFile, error) {
	// Every param of the contract, defaults filled in (those that
	// depend on the inputs' shapes included): docs/exec-backend.md. The
	// tensors are described under the same params.
	params, err := ops.CompleteParams(op, p, in)
	if err != nil {
		return nil, err
	}
	inSpecs, err := op.Inputs(params, in)
	if err != nil {
		return nil, err
	}
	outSpecs, err := op.Outputs(params, in)
	if err != nil {
		return nil, err
	}
	cf := &ExecCaseFile{Version: ExecCaseVersion, Op: op.Name(), Params: params, Numerics: num,
		Inputs: []ExecTensor{}, Outputs: []ExecTensor{}}
	known := map[string]bool{}
	for _, s := range inSpecs {
		known[s.Name] = true
		t, ok := in[s.Name]
		if !ok || t == nil {
			continue // optional and absent; CheckInputs is the caller's job
		}
		if !safeName(s.Name) {
			return nil, fmt.Errorf("exec: input name %q cannot be a file name", s.Name)
		}
		cf.Inputs = append(cf.Inputs, ExecTensor{Name: s.Name, File: s.Name + ".npy", DType: t.DType, Shape: shapeOf(t.Shape)})
	}
	for _, name := range slices.Sorted(maps.Keys(in)) {
		if !known[name] {
			return nil, fmt.Errorf("%s: unknown input %q", op.Name(), name)
		}
	}
	for _, s := range outSpecs {
		if !safeName(s.Name) {
			return nil, fmt.Errorf("exec: output name %q cannot be a file name", s.Name)
		}
		cf.Outputs = append(cf.Outputs, ExecTensor{Name: s.Name, File: "out/" + s.Name + ".npy", DType: s.DType, Shape: shapeOf(s.Shape)})
	}
	return cf, nil
}

func shapeOf(s []int) []int {
	if s == nil {
		return []int{}
	}
	return slices.Clone(s)
}

// safeName reports whether a tensor name can be used as a file name as is.
func safeName(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// caseDir is one case laid out for a command, as the exec protocol has
// it (Exec and Worker lay it out the same way): what was written, and
// what is needed to read the outputs back and to tell whether the inputs
// were written into.
type caseDir struct {
	path string // absolute
	keep bool   // ExecOptions.Keep
	cf   *ExecCaseFile
	in   map[string]*tensor.Tensor
	sums map[string][sha256.Size]byte
}

// layoutCase makes a fresh directory under opt.WorkDir and writes the case
// into it: case.json (with opt.Numerics), the inputs and the empty out
// directory. The caller must call close once the command is done with it.
func layoutCase(opName string, p ops.Params, in map[string]*tensor.Tensor, opt ExecOptions) (_ *caseDir, err error) {
	op, err := ops.Lookup(opName)
	if err != nil {
		return nil, err
	}
	cf, err := newCaseFile(op, p, in, opt.Numerics)
	if err != nil {
		return nil, err
	}
	dir, err := makeCaseDir(opt.WorkDir)
	if err != nil {
		return nil, err
	}
	cd := &caseDir{path: dir, keep: opt.Keep, cf: cf, in: in}
	if cd.sums, err = writeCase(dir, cf, in); err != nil {
		cd.close(&err)
		return nil, err
	}
	return cd, nil
}

// close removes the directory, or, with ExecOptions.Keep, leaves it and
// names it in *err when there is one. A directory that cannot be removed
// (removeTree) becomes the run's error, joined to any it had, and
// reported true: the caller must then drop the outputs, so that the case
// is a backend failure and the leftover fails the run instead of passing
// silently.
func (c *caseDir) close(err *error) (leftover bool) {
	if !c.keep {
		if rerr := removeTree(c.path); rerr != nil {
			*err = errors.Join(*err, fmt.Errorf("exec: %w", rerr))
			return true
		}
		return false
	}
	if *err != nil {
		*err = fmt.Errorf("%w (case directory kept: %s)", *err, safefile.Quote(c.path))
	}
	return false
}

// collect reads back what the command wrote by deadline (readDeadline):
// every output, held to its dtype and shape
// with an element cap of the contract's size, and timing.json. modified
// is an *InputsModifiedError when the command wrote into an input file,
// nil otherwise; the outputs are returned with it, to be judged as well.
// err, when not nil, says what the command failed to write; the caller
// adds who the command was.
func (c *caseDir) collect(ctx context.Context, deadline time.Time) (out map[string]*tensor.Tensor, meas *Measurement, modified, err error) {
	out = make(map[string]*tensor.Tensor, len(c.cf.Outputs))
	for _, o := range c.cf.Outputs {
		if err := context.Cause(ctx); err != nil && ctx.Err() != nil {
			return nil, nil, nil, fmt.Errorf("reading the outputs: %w", err)
		}
		t, err := readOutput(c.path, o, deadline)
		if err != nil {
			return nil, nil, nil, err
		}
		out[o.Name] = t
	}
	meas, err = readTiming(filepath.Join(c.path, "out", "timing.json"), deadline)
	if err != nil {
		return nil, nil, nil, err
	}
	if changed := modifiedInputs(c.path, c.cf, c.in, c.sums, deadline); len(changed) > 0 {
		return out, meas, &InputsModifiedError{Inputs: changed}, nil
	}
	return out, meas, nil, nil
}

// readDeadline is when the outputs of a case whose command started at
// start must have been read: the case's time limit, or the caller's
// deadline when earlier. A slow file system or a huge output cannot hold
// the harness past it.
func readDeadline(ctx context.Context, start time.Time, timeout time.Duration) time.Time {
	deadline := start.Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return deadline
}

// makeCaseDir creates a fresh, absolute case directory under workDir.
func makeCaseDir(workDir string) (string, error) {
	dir, err := os.MkdirTemp(workDir, "npuverify-case-")
	if err != nil {
		return "", fmt.Errorf("exec: making the case directory: %w", err)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return dir, nil
}

// writeCase writes case.json, the inputs and the empty out directory, and
// returns the sha256 of every input file as written, so that a kernel
// that writes into its inputs is caught (modifiedInputs).
func writeCase(dir string, cf *ExecCaseFile, in map[string]*tensor.Tensor) (map[string][sha256.Size]byte, error) {
	sums := make(map[string][sha256.Size]byte, len(cf.Inputs))
	for _, s := range cf.Inputs {
		sum, err := writeNpy(filepath.Join(dir, filepath.FromSlash(s.File)), in[s.Name])
		if err != nil {
			return nil, fmt.Errorf("exec: writing input %q: %w", s.Name, err)
		}
		sums[s.Name] = sum
	}
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o755); err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	b, err := json.MarshalIndent(cf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("exec: encoding case.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "case.json"), append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	return sums, nil
}

// writeNpy writes t to a fresh file through a buffer (the case directory is
// private and short-lived: no temp file, no fsync) and returns the file's
// sha256.
func writeNpy(path string, t *tensor.Tensor) (sum [sha256.Size]byte, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return sum, err
	}
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 64<<10)
	if err := tensor.WriteNpy(w, t); err != nil {
		f.Close()
		return sum, fmt.Errorf("%s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return sum, fmt.Errorf("%s: %w", path, err)
	}
	copy(sum[:], h.Sum(nil))
	return sum, f.Close()
}
