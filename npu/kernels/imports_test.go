package kernels_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The emulated kernels do not import package reference, the float64
// truth they are judged against: a kernel that calls the reference (for
// its keep count, its ranking, its top two) agrees with it by
// construction, and a bug the two share is one no comparison can find.
// What package ops imports reaches the kernels only through ops's
// contract (shapes, params), so only direct imports are checked.
func TestKernelsDoNotImportReference(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	const pkg = "github.com/npuverify/npuverify/npu/kernels"
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	imports := strings.Fields(string(out))
	// The kernels run on the emulator: a listing without npu is not the
	// kernels' imports, and the check below would pass on nothing.
	if !slices.Contains(imports, "github.com/npuverify/npuverify/npu") {
		t.Fatalf("go list %s lacks github.com/npuverify/npuverify/npu: the test does not see the kernels' imports\n%s", pkg, out)
	}
	if slices.Contains(imports, "github.com/npuverify/npuverify/reference") {
		t.Errorf("npu/kernels imports reference: the kernels must compute what they need themselves (imports: %s)", strings.Join(imports, ", "))
	}
}
