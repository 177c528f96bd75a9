package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/internal/panicguard"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/safefile"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

const runSynopsis = "run OP [--param k=v]... --in NAME=FILE.npy... --out DIR [--trace FILE.json] [--backend B] [--profile P] [--timeout D]"

// cmdRun runs one op on .npy inputs: it holds every input to the op's
// contract (dtype and shape exactly; bf16 files are '<u2' bit patterns,
// read as bf16 only where the contract says bf16), runs the backend,
// writes DIR/<output>.npy and DIR/cost.json (costJSON: the modelled cost,
// or the measured kernel time, or null), and judges the outputs against the reference
// with the `bound` policy: exit 1 when they fail it.
func cmdRun(args []string, stdout, stderr io.Writer) error {
	const where = "run"
	fs := newFlagSet(where, runSynopsis, stdout)
	var params, inputs multiFlag
	fs.Var(&params, "param", "op parameter k=v (repeatable)")
	fs.Var(&inputs, "in", "input tensor NAME=FILE.npy (repeatable)")
	outDir := fs.String("out", "", "directory to write <output>.npy and cost.json to (required)")
	traceFile := fs.String("trace", "", "write the emulator's schedule to FILE.json as Chrome trace events (open in ui.perfetto.dev): a track per core and pipe, a span per instruction")
	var dev deviceFlags
	dev.register(fs)
	pos, err := parse(fs, where, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return usageErr(where, "missing OP (want one of %s)", strings.Join(opdb.Names(), ", "))
	case len(pos) > 1:
		return usageErr(where, "unexpected argument %q after OP %q", pos[1], pos[0])
	case *outDir == "":
		return usageErr(where, "--out DIR is required")
	case *traceFile != "" && dev.backend != "emulator":
		return usageErr(where, "--trace: only the emulator backend has a schedule to trace, not %s", dev.backend)
	}
	op, err := ops.Lookup(pos[0])
	if err != nil {
		return usageErr(where, "%v", err)
	}
	p := ops.Params{}
	for _, kv := range params {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageErr(where, "--param %q: want k=v", kv)
		}
		if _, dup := p[k]; dup {
			return usageErr(where, "--param %s: given twice", k)
		}
		p[k] = v
	}
	vp, err := op.Validate(p)
	if err != nil {
		return inputErr(where, fmt.Errorf("--param: %w", err))
	}
	prof, b, err := dev.build(where)
	if err != nil {
		return err
	}
	defer closeBackend(b, stderr, where)

	in, files, err := readInputs(where, inputs)
	if err != nil {
		return err
	}
	if err := holdToContract(op, vp, in, files); err != nil {
		return inputErr(where, err)
	}
	if err := checkRunTargets(where, *outDir, op, vp, in, files); err != nil {
		return err
	}

	intr := catchSignals(b, stderr)
	defer intr.stop()
	c := ops.Case{Op: op.Name(), Params: vp, Name: "run"}
	pc := &harness.Prepared{Case: c, Op: op, Params: vp, Inputs: in}
	ctx, trace := intr.ctx, (*npu.Trace)(nil)
	if *traceFile != "" {
		trace = npu.NewTrace()
		ctx = npu.WithTrace(ctx, trace)
	}
	var outputs *outputWrite // written while the outputs are judged
	ran := func(out map[string]*tensor.Tensor, meas *backend.Measurement) {
		outputs = startOutputs(*outDir, out, meas)
	}
	res, err := harness.RunPrepared(ctx, b, pc, harness.Options{Numerics: prof.Numerics, Stream: true, Timeout: dev.caseTimeout(b), StepTimeout: dev.timeout, Ran: ran})
	intr.finish() // from here a closed stdout costs nothing (signal.go)
	if err := intr.err(where, "the kernel was killed, no output written"); err != nil {
		outputs.abort()
		return err
	}
	if err != nil {
		outputs.abort()
		return harnessErr(where, err)
	}

	if outputs == nil { // a harness that did not call Ran
		outputs = startOutputs(*outDir, res.Outputs, res.Measurement)
	}
	written, err := outputs.commit()
	if err != nil {
		return inputErr(where, fmt.Errorf("--out %s: %w", *outDir, err))
	}
	if trace != nil {
		if err := writeTrace(*traceFile, trace); err != nil {
			return inputErr(where, fmt.Errorf("--trace %s: %w", *traceFile, err))
		}
		written = append(written, *traceFile)
	}
	for _, o := range res.Verify.Outputs {
		verdict := "pass"
		for _, v := range o.Verdicts {
			if !v.Pass {
				verdict = "FAIL"
			}
		}
		fmt.Fprintf(stdout, "%s %s%v: %s %s (tightness %s, %s)\n", o.Name, o.DType, o.Shape,
			strings.Join(policyNames(o.Verdicts), "+"), verdict, fmtNum(o.Metrics.Tightness), maxAbsText(o.Metrics))
	}
	if m := res.Measurement; m != nil && m.Model != nil {
		fmt.Fprintf(stdout, "cost: %d cycles, %d GM bytes, vector util %s, load balance %s\n", m.Model.Cycles,
			m.Model.GMBytes(), fmtNum(m.Model.VectorUtil), fmtNum(m.Model.LoadBalance))
	} else if secs, ok := m.Seconds(); ok {
		fmt.Fprintf(stdout, "kernel time: %s s (median of %d)\n", fmtNum(secs), len(m.KernelSeconds))
	}
	fmt.Fprintf(stdout, "wrote %s\n", strings.Join(written, ", "))
	if !res.Pass() {
		fmt.Fprintln(stderr, res.Verify.Failure())
		return failed{exitFail}
	}
	return nil
}

// readInputs reads the --in files (NAME=FILE.npy each) into tensors by
// name, and the files by name. Its errors are those of reading them one
// by one in order: the first malformed or repeated flag, or the first
// file before it that cannot be read. It reads the files at once, each on
// a goroutine of its own, when every one has a header readInput accepts
// (two 32 MiB inputs: two cores copying from the page cache), and one by
// one otherwise, so that no file after a refused one is read.
func readInputs(where string, inputs []string) (map[string]*tensor.Tensor, map[string]string, error) {
	type inFile struct{ name, file string }
	var list []inFile
	var usage error
	seen := map[string]bool{}
	for _, nf := range inputs {
		name, file, ok := strings.Cut(nf, "=")
		if !ok || name == "" || file == "" {
			usage = usageErr(where, "--in %q: want NAME=FILE.npy", nf)
			break
		}
		if seen[name] {
			usage = usageErr(where, "--in %s: tensor given twice", name)
			break
		}
		seen[name] = true
		list = append(list, inFile{name, file})
	}
	files := make([]string, len(list))
	for i, f := range list {
		files[i] = f.file
	}
	ts, errs := make([]*tensor.Tensor, len(list)), make([]error, len(list))
	if growHeapForInputs(files) && len(list) > 1 {
		var wg sync.WaitGroup
		var crash panicguard.Catcher
		for i, f := range list {
			wg.Go(func() {
				defer crash.Catch()
				ts[i], errs[i] = readInput(f.file)
			})
		}
		wg.Wait()
		crash.Rethrow()
	} else {
		for i, f := range list {
			if ts[i], errs[i] = readInput(f.file); errs[i] != nil {
				break
			}
		}
	}
	in, byName := map[string]*tensor.Tensor{}, map[string]string{}
	for i, f := range list {
		if errs[i] != nil {
			return nil, nil, inputErr(where, fmt.Errorf("--in %s=%s: tensor %q: %w", f.name, f.file, f.name, errs[i]))
		}
		in[f.name], byName[f.name] = ts[i], f.file
	}
	if usage != nil {
		return nil, nil, usage
	}
	return in, byName, nil
}

// growHeapForInputs readies the heap for a run on the --in files: twice
// their data bytes of huge-page memory (tensor.GrowHeapHuge), which the
// inputs, the outputs and the reference's scratch then take. A fresh
// 1024³ gemm's page faults went from about 4200 to 1900 and its CPU time
// by a fifth; three times the inputs took them to 1200 but its peak
// resident memory from 23.6 to 25.1 MiB (huge pages half used), past
// issue 12's four times its tensors (24 MiB), where twice keeps it at
// 24.0 (max of six runs each, alternated, 2026-12-06). Only files whose
// header readInput will accept count (tensor.NpyFileDataBytes reads the
// header alone), so that an input refused costs no memory. It reports
// whether every file's header was accepted.
func growHeapForInputs(files []string) bool {
	total, all := int64(0), true
	for _, file := range files {
		n, err := tensor.NpyFileDataBytes(file, 0, tensor.ReadOptions{})
		if err != nil {
			n, err = tensor.NpyFileDataBytes(file, tensor.BFloat16, tensor.ReadOptions{})
		}
		if err != nil {
			all = false
			continue
		}
		total += n
	}
	tensor.GrowHeapHuge(int(min(2*total, 1<<36)))
	return all
}

// readInput reads an .npy file as the dtype its header names; '<u2' data
// (which only bf16 travels as) is read as bf16 bit patterns. Whether that
// dtype is the one the contract wants is checked afterwards, exactly.
func readInput(file string) (*tensor.Tensor, error) {
	t, err := tensor.ReadNpyFile(file, 0, tensor.ReadOptions{})
	if err == nil {
		return t, nil
	}
	if tb, err2 := tensor.ReadNpyFile(file, tensor.BFloat16, tensor.ReadOptions{}); err2 == nil {
		return tb, nil
	}
	// ReadNpyFile names the file already; drop the repetition.
	msg := strings.TrimPrefix(err.Error(), file+": ")
	var pe *os.PathError
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	return nil, errors.New(msg)
}

// holdToContract checks the inputs against the op's contract for the
// validated params (ops.CheckInputs), naming the --in file and tensor of
// any mismatch.
func holdToContract(op ops.Op, p ops.Params, in map[string]*tensor.Tensor, files map[string]string) error {
	err := ops.CheckInputs(op, p, in)
	var ce *ops.ContractError
	if !errors.As(err, &ce) {
		return err
	}
	switch {
	case ce.Got == nil:
		return fmt.Errorf("%s %s: input %q is missing (give --in %s=FILE.npy)", op.Name(), p, ce.Tensor, ce.Tensor)
	case ce.Want == nil:
		return fmt.Errorf("--in %s=%s: %s has no input %q (want %s)", ce.Tensor, files[ce.Tensor], op.Name(), ce.Tensor, strings.Join(ce.Inputs, ", "))
	}
	at := fmt.Sprintf("--in %s=%s: tensor %q", ce.Tensor, files[ce.Tensor], ce.Tensor)
	if have, want := ce.Got.DType, ce.Want.DType; have != want {
		haveText := fmt.Sprintf("dtype %s ('%s')", have, tensor.NpyDescr(have))
		if have == tensor.BFloat16 {
			haveText = fmt.Sprintf("'%s' data (read only as bf16 bit patterns)", tensor.NpyDescr(have))
		}
		return fmt.Errorf("%s: %s, but %s %s wants %s ('%s'); nothing is cast", at, haveText, op.Name(), p, want, tensor.NpyDescr(want))
	}
	return fmt.Errorf("%s: shape %v, but %s %s wants %v%s", at, ce.Got.Shape, op.Name(), p, ce.Want.Shape, sameShapeNote(op, p, in, ce))
}

// sameShapeNote explains a shape mismatch that the contract derives from
// another input: when the contract gives the inputs the same shape (as
// vector_add's x and y), the message says the two must match rather than
// blaming one of them.
func sameShapeNote(op ops.Op, p ops.Params, in map[string]*tensor.Tensor, ce *ops.ContractError) string {
	specs, err := op.Inputs(p, in)
	if err != nil {
		return ""
	}
	var peers []string
	for _, sp := range specs {
		if sp.Name != ce.Tensor && slices.Equal(sp.Shape, ce.Want.Shape) && in[sp.Name] != nil && slices.Equal(in[sp.Name].Shape, sp.Shape) {
			peers = append(peers, fmt.Sprintf("%q %v", sp.Name, in[sp.Name].Shape))
		}
	}
	if len(peers) == 0 {
		return ""
	}
	return fmt.Sprintf(": %s must have the same shape as %s", strconv.Quote(ce.Tensor), strings.Join(peers, " and "))
}

// maxAbsText is the run summary's "max abs" figure: the largest error
// over the elements finite in both output and reference, and says so when
// some or all of them are not (an all-NaN output has no error to show,
// not an error of 0).
func maxAbsText(m verify.Metrics) string {
	switch {
	case m.Compared == 0 && m.N > 0:
		return fmt.Sprintf("max abs — (none of the %d elements is finite in both output and reference)", m.N)
	case m.Compared < m.N:
		return fmt.Sprintf("max abs %s over the %d of %d elements finite in both", fmtNum(m.MaxAbs), m.Compared, m.N)
	}
	return "max abs " + fmtNum(m.MaxAbs)
}

// costJSON is what cost.json holds for a measurement: the model's own
// record (the emulator's npu.Cost, every field) when the backend models
// one; else the measured kernel time, its median as "seconds" and every
// sample; else nothing (null).
func costJSON(m *backend.Measurement) any {
	if m == nil {
		return nil
	}
	if m.Model != nil {
		return m.Model.Detail
	}
	secs, ok := m.Seconds()
	if !ok {
		return nil
	}
	return struct {
		Seconds       float64   `json:"seconds"`
		KernelSeconds []float64 `json:"kernel_seconds"`
	}{secs, m.KernelSeconds}
}

// outputWrite writes a run's output files (every output as
// DIR/<name>.npy and the cost as DIR/cost.json) on a goroutine of its
// own, started as soon as the backend has returned them (harness.Options.Ran),
// so that rendering them and the disk's fsync of tens of MiB overlap the
// judgement, which only reads the outputs. They are rendered into
// temporary files (safefile.Prepare) and put in place together by commit
// once the run has its verdict (safefile.WriteAll's all or none: the
// outputs and their cost.json never come from two runs; each never over
// anything but a regular file); a run that ends without a verdict (an
// error, a signal) aborts them, so that no output is written.
type outputWrite struct {
	done  chan struct{}
	crash panicguard.Catcher // a panic while rendering, raised again by commit or abort
	p     *safefile.Pending
	paths []string
	err   error
}

// startOutputs starts writing out and the cost of meas into dir.
func startOutputs(dir string, out map[string]*tensor.Tensor, meas *backend.Measurement) *outputWrite {
	w := &outputWrite{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer w.crash.Catch()
		w.p, w.paths, w.err = prepareOutputs(dir, out, meas)
	}()
	return w
}

// prepareOutputs renders the output files into pending temporary files
// and returns them with the paths they will have.
func prepareOutputs(dir string, out map[string]*tensor.Tensor, meas *backend.Measurement) (*safefile.Pending, []string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	var targets []safefile.Target
	for _, name := range slices.Sorted(maps.Keys(out)) {
		t := out[name]
		targets = append(targets, safefile.Target{Path: filepath.Join(dir, name+".npy"), Perm: 0o644,
			Render: func(w io.Writer) error { return tensor.WriteNpy(w, t) }})
	}
	b, err := json.MarshalIndent(costJSON(meas), "", "  ")
	if err != nil {
		return nil, nil, fmt.Errorf("cost.json: %w", err)
	}
	targets = append(targets, safefile.Target{Path: filepath.Join(dir, "cost.json"), Perm: 0o644,
		Render: func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err }})
	p, err := safefile.Prepare(targets)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (no output replaced)", err)
	}
	paths := make([]string, len(targets))
	for i, t := range targets {
		paths[i] = t.Path
	}
	return p, paths, nil
}

// commit waits for the files and puts them in place, returning their
// paths.
func (w *outputWrite) commit() ([]string, error) {
	<-w.done
	w.crash.Rethrow()
	if w.err != nil {
		return nil, w.err
	}
	if err := w.p.Commit(); err != nil {
		return nil, fmt.Errorf("%w (no output replaced)", err)
	}
	return w.paths, nil
}

// abort waits for the files and removes them; nil does nothing.
func (w *outputWrite) abort() {
	if w == nil {
		return
	}
	<-w.done
	if w.p != nil {
		w.p.Abort()
	}
	w.crash.Rethrow()
}

// checkRunTargets checks, before the kernel runs, every file run will
// write into dir (each output's <name>.npy and cost.json): one that is an
// --in file is a usage error (the run would replace its own input); one
// that may not be replaced, or a dir that cannot be made or written, is
// an input error naming --out and the path.
func checkRunTargets(where, dir string, op ops.Op, p ops.Params, in map[string]*tensor.Tensor, files map[string]string) error {
	specs, err := op.Outputs(p, in)
	if err != nil {
		return inputErr(where, err)
	}
	paths := make([]string, 0, len(specs)+1)
	for _, s := range specs {
		paths = append(paths, filepath.Join(dir, s.Name+".npy"))
	}
	paths = append(paths, filepath.Join(dir, "cost.json"))
	for _, t := range paths {
		for _, name := range slices.Sorted(maps.Keys(files)) {
			if sameTarget(t, files[name]) {
				return usageErr(where, "--out %s: would replace %s, the --in %s file: write the outputs to another directory", dir, t, name)
			}
		}
	}
	// dir, or (when it is still to be made) its nearest existing ancestor,
	// must take new files.
	probe := dir
	for {
		if _, err := os.Lstat(probe); err == nil {
			break
		}
		parent := filepath.Dir(probe)
		if parent == probe {
			break
		}
		probe = parent
	}
	if probe != dir {
		if err := safefile.CheckTarget(filepath.Join(probe, ".npuverify-out")); err != nil {
			return inputErr(where, fmt.Errorf("--out %s: cannot be made: %w", dir, err))
		}
		return nil
	}
	for _, t := range paths {
		if err := safefile.CheckTarget(t); err != nil {
			return inputErr(where, fmt.Errorf("--out %s: %w", dir, err))
		}
	}
	return nil
}

// writeTrace writes the run's schedule as Chrome trace event JSON,
// replacing FILE only when whole (safefile.WriteAll).
func writeTrace(file string, t *npu.Trace) error {
	return safefile.WriteAll([]safefile.Target{{Path: file, Perm: 0o644, Render: t.WriteJSON}})
}
