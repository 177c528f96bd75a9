package suites_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/spec"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/suites"
)

// The backend under test: the emulator unless NPUVERIFY_BACKEND names an
// exec command (NPUVERIFY_BACKEND="exec:./my-kernel --flag").
var underTest backend.Backend

func TestSuites(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "npuverify suites")
}

var _ = BeforeSuite(func() {
	b, err := selectBackend(os.Getenv("NPUVERIFY_BACKEND"))
	Expect(err).NotTo(HaveOccurred())
	underTest = b
	fmt.Fprintf(GinkgoWriter, "backend under test: %s\n", b.Name())
})

func selectBackend(s string) (backend.Backend, error) {
	b, err := spec.Open(s, npu.Ascend910B(), time.Minute)
	if err != nil {
		return nil, fmt.Errorf("NPUVERIFY_BACKEND: %w", err)
	}
	return b, nil
}

func backendUnderTest() backend.Backend { return underTest }

var _ = suites.DescribeOps(backendUnderTest)

var _ = suites.DescribeEmulatorVectorAdd(npu.Ascend910B())

var _ = suites.DescribeGolden(backendUnderTest)

var _ = suites.DescribeCLI("..")
