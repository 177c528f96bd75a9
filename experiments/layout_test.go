package experiments

import (
	"context"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/npu"
)

// TestLayoutCost: the study prices each workload in both layouts, the
// GEMM's NZ operands holding the same values (its GM bytes in differ only
// by the padding of M, K, N to the fractals: none at 64³), and the
// NC1HWC0 bias add moves the padded channels (GM bytes in and out
// C1·C0/C of NCHW's) in fewer, longer transfers.
func TestLayoutCost(t *testing.T) {
	cfg := LayoutConfig{GEMM: [3]int{64, 64, 64}, N: 2, C: 20, H: 7, W: 7, Seed: 1}
	tab, err := LayoutCost(context.Background(), npu.Ascend910B(), cfg)
	if err != nil {
		t.Fatalf("layout study %+v: %v", cfg, err)
	}
	if len(tab.Rows) != 4 {
		t.Fatalf("layout study %+v: %d rows, want 4", cfg, len(tab.Rows))
	}
	for _, r := range tab.Rows {
		if r.Cycles <= 0 || r.GMBytesIn <= 0 || r.GMBytesOut <= 0 {
			t.Errorf("layout study %+v: row %+v: want positive cycles and GM bytes", cfg, r)
		}
	}
	nd, nz := tab.Rows[0], tab.Rows[1]
	if nd.GMBytesIn != nz.GMBytesIn {
		t.Errorf("layout study %+v: gemm GM bytes in: got ND %d, NZ %d; want equal (64³ needs no padding)", cfg, nd.GMBytesIn, nz.GMBytesIn)
	}
	nchw, frac := tab.Rows[2], tab.Rows[3]
	const plain, padded = 2 * 20 * 49 * 2, 2 * 32 * 49 * 2 // bytes of x (and of y)
	if nchw.GMBytesOut != plain || frac.GMBytesOut != padded {
		t.Errorf("layout study %+v: bias add GM bytes out: got NCHW %d, NC1HWC0 %d; want %d, %d", cfg, nchw.GMBytesOut, frac.GMBytesOut, plain, padded)
	}
	var md strings.Builder
	if err := tab.Markdown(&md); err != nil || !strings.Contains(md.String(), "| bias add 2×20×7×7 | NC1HWC0 |") {
		t.Errorf("layout study markdown: err %v, got:\n%s", err, md.String())
	}
}
