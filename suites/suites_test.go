package suites_test

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/spec"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/suites"
)

// BackendEnv names the backend under test: the emulator unless it names
// an exec or worker command (NPUVERIFY_BACKEND="exec:./my-kernel --flag"),
// run in the directory the user ran go test from (suites.UserDir).
const BackendEnv = "NPUVERIFY_BACKEND"

// The backend under test, what it is held to, and the run's summary.
var (
	underTest backend.Backend
	scope     suites.Scope
	summary   string
)

func TestSuites(t *testing.T) {
	RegisterFailHandler(Fail)
	s, err := newScope(os.Getenv(BackendEnv), os.Getenv(suites.OpsEnv))
	if err != nil {
		t.Fatal(err)
	}
	scope = s
	suiteConfig, reporterConfig := GinkgoConfiguration()
	suiteConfig.LabelFilter = scope.LabelFilter(suiteConfig.LabelFilter)
	// The banner says what is skipped, once: not one S per spec.
	reporterConfig.SilenceSkips = true
	fmt.Println(scope.Banner())
	RunSpecs(t, "npuverify suites", suiteConfig, reporterConfig)
	fmt.Print(summary)
}

// newScope is the scope of a run under the given NPUVERIFY_BACKEND and
// NPUVERIFY_OPS: an unknown op fails the run before any spec runs.
func newScope(backendSpec, opsList string) (suites.Scope, error) {
	names, err := suites.ParseOps(opsList)
	if err != nil {
		return suites.Scope{}, err
	}
	s := suites.Scope{Backend: backendSpec, Emulator: isEmulator(backendSpec), Ops: names}
	if s.Emulator {
		s.Backend = "emulator"
	}
	return s, nil
}

// isEmulator reports whether a NPUVERIFY_BACKEND value names the emulator.
func isEmulator(backendSpec string) bool { return backendSpec == "" || backendSpec == "emulator" }

// skipUnlessEmulator skips a plain go test that checks the emulator's own
// kernels, when NPUVERIFY_BACKEND names another backend: it would say
// nothing about that backend.
func skipUnlessEmulator(t *testing.T) {
	t.Helper()
	if s := os.Getenv(BackendEnv); !isEmulator(s) {
		t.Skipf("checks the emulator's own kernels, not %s=%s", BackendEnv, s)
	}
}

var _ = BeforeSuite(func() {
	b, err := selectBackend(os.Getenv(BackendEnv))
	Expect(err).NotTo(HaveOccurred())
	underTest = b
	fmt.Fprintf(GinkgoWriter, "backend under test: %s\n", b.Name())
})

var _ = AfterSuite(func() {
	if c, ok := underTest.(io.Closer); ok {
		Expect(c.Close()).To(Succeed(), "closing backend %s", underTest.Name())
	}
})

// The summary is the last thing TestSuites prints (go test shows it with
// -v, or when the run fails); every spec's labels are checked against
// the documented ones on every run.
var _ = ReportAfterSuite("summary and labels", func(r Report) {
	summary = "\n" + suites.RenderSummary(scope.Backend, suites.Summarize(r))
	if problems := suites.LabelProblems(r); len(problems) > 0 {
		Fail(fmt.Sprintf("%d specs with labels the suites do not document:\n%s", len(problems), strings.Join(problems, "\n")))
	}
})

func selectBackend(s string) (backend.Backend, error) {
	b, err := spec.OpenIn(s, npu.Ascend910B(), time.Minute, suites.UserDir())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", BackendEnv, err)
	}
	return b, nil
}

func backendUnderTest() backend.Backend { return underTest }

var _ = suites.DescribeOps(backendUnderTest)

var _ = suites.DescribeEmulatorVectorAdd(npu.Ascend910B())

var _ = suites.DescribeGolden(backendUnderTest)

var _ = suites.DescribeCLI("..")
