package backend

import (
	"crypto/sha256"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/npuverify/npuverify/safefile"
	"github.com/npuverify/npuverify/tensor"
)

// InputsModifiedError reports that a kernel wrote into its inputs: its
// input files (docs/exec-backend.md: inputs are read-only), or the
// emulated GM of its input tensors. The exec backend and the emulator
// return it together with the outputs, so the harness judges the outputs
// and fails the inputs-unchanged check once per modified input: in a real
// framework such a kernel clobbers a tensor someone else still reads.
type InputsModifiedError struct {
	// Inputs maps each modified input to what changed (the first element
	// that differs, or why the file no longer reads as that input).
	Inputs map[string]string
}

func (e *InputsModifiedError) Error() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(e.Inputs)) {
		parts = append(parts, fmt.Sprintf("input %q: %s", name, e.Inputs[name]))
	}
	return "kernel modified its inputs: " + strings.Join(parts, "; ")
}

// hashFile returns the sha256 of the regular file at path (at most
// maxBytes long), opened without following links or blocking.
func hashFile(path string, maxBytes int64) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, _, err := safefile.Open(path, maxBytes)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxBytes+1)); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// modifiedInputs re-hashes every input file of the case directory against
// the sums taken when it was written and describes each that changed:
// the first element that differs from in, when the file still reads as
// the input's dtype and shape, else why it does not.
func modifiedInputs(dir string, cf *ExecCaseFile, in map[string]*tensor.Tensor, sums map[string][sha256.Size]byte, deadline time.Time) map[string]string {
	changed := map[string]string{}
	for _, s := range cf.Inputs {
		path := filepath.Join(dir, filepath.FromSlash(s.File))
		orig := in[s.Name]
		limit := int64(orig.Len()*orig.DType.Size()) + 1<<16 // data plus any header
		sum, err := hashFile(path, limit)
		switch {
		case err != nil:
			changed[s.Name] = fmt.Sprintf("%s can no longer be read: %v", s.File, err)
		case sum != sums[s.Name]:
			changed[s.Name] = describeChange(path, s, orig, deadline)
		}
	}
	return changed
}

// describeChange says how the input file at path differs from orig.
func describeChange(path string, s ExecTensor, orig *tensor.Tensor, deadline time.Time) string {
	t, err := tensor.ReadNpyFile(path, s.DType, tensor.ReadOptions{MaxElements: max(orig.Len(), 1), Deadline: deadline})
	switch {
	case err != nil:
		return fmt.Sprintf("%s was rewritten and no longer reads as %s%v: %v", s.File, s.DType, s.Shape, err)
	case t.DType != orig.DType || !t.SameShape(orig.Shape):
		return fmt.Sprintf("%s was rewritten as %s%v, want %s%v", s.File, t.DType, t.Shape, orig.DType, orig.Shape)
	}
	if ok, i := tensor.BitsEqual(orig, t); !ok {
		return fmt.Sprintf("%s was written (first difference at element %d: %v, was %v)", s.File, i, t.Float64(i), orig.Float64(i))
	}
	return fmt.Sprintf("%s was rewritten with the same values in another encoding", s.File)
}
