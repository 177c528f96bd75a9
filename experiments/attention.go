package experiments

import (
	"github.com/npuverify/npuverify/quality"
	"github.com/npuverify/npuverify/report"
)

// DefaultAttentionConfig is the attention-quality study the report
// command renders: quality's default, named here beside the other two
// defaults so that the command takes all three from one place.
func DefaultAttentionConfig() quality.Config { return quality.DefaultConfig() }

// AttentionQuality runs the attention-quality study (float64, seeded:
// quality.AttentionQuality) and hands it back as the report section, so
// the command treats it as it treats the other experiments.
func AttentionQuality(cfg quality.Config) (*report.AttentionQuality, error) {
	tab, err := quality.AttentionQuality(cfg)
	if err != nil {
		return nil, err
	}
	return &report.AttentionQuality{Table: tab}, nil
}
