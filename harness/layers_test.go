package harness_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The layers read upward: the core that judges an implementation links
// none of the implementations it judges. A kernel behind the exec protocol
// is then judged by code that knows nothing of the emulated device, and
// an emulator type can never leak into what a real kernel is handed.
func TestCoreLinksNoImplementation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	const mod = "github.com/npuverify/npuverify/"
	implementation := []string{"npu", "npu/kernels", "opdb", "backend/emulator"}
	for _, tc := range []struct {
		pkg       string
		forbidden []string
	}{
		{"harness", implementation},
		{"golden", implementation},
		{"verify", append([]string{"ops"}, implementation...)},
		{"backend", implementation},
		{"ops", append([]string{"verify", "harness", "backend"}, implementation...)},
		{"report", []string{"npu/kernels", "opdb", "backend/emulator"}},
	} {
		out, err := exec.Command("go", "list", "-deps", mod+tc.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps ./%s: %v\n%s", tc.pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, mod+"tensor") {
			t.Fatalf("go list -deps ./%s lacks tensor: the test does not see its dependencies\n%s", tc.pkg, out)
		}
		for _, f := range tc.forbidden {
			if slices.Contains(deps, mod+f) {
				t.Errorf("go list -deps ./%s contains %s, which it must not link (layers read upward: docs/adding-an-operator.md)", tc.pkg, f)
			}
		}
	}
}
