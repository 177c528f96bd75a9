package mutation

import (
	"time"
	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/npu"
	"context"
	"os"
	"testing"
)

func TestMutationScore(t *testing.T) {
	res, err := Run(context.Background(), Options{AllCases: os.Getenv("MUTATION_ALL") != ""})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WriteTable(os.Stdout); err != nil {
		t.Fatal(err)
	}
}

func TestTiming(t *testing.T) {
	cases, err := DefaultSuite(npu.Ascend910B())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []backend.Backend{backend.NewEmulator(npu.Ascend910B()), backend.NewEmulator(npu.Ascend910B(), backend.WithVariant(DefaultVariants()[0])), backend.NewEmulator(npu.Ascend910B(), backend.WithVariant(DefaultVariants()[1]))} {
		var gold time.Duration
		for _, c := range cases {
			s := time.Now()
			RunCase(context.Background(), b, c, true)
			if c.Golden != nil {
				gold += time.Since(s)
			} else {
				t.Logf("%s %s", c.ID, time.Since(s))
			}
		}
		t.Logf("golden %s", gold)
	}
}
