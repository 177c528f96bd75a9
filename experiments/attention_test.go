package experiments

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/quality"
	"github.com/npuverify/npuverify/report"
)

// TestAttentionQualityIsQualitys: the section carries quality's table
// unchanged, renders with its plots, and a bad configuration is quality's
// error, not a section.
func TestAttentionQualityIsQualitys(t *testing.T) {
	cfg := DefaultAttentionConfig()
	cfg.Tokens, cfg.Queries = 64, 4
	s, err := AttentionQuality(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want, err := quality.AttentionQuality(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Table, want) {
		t.Errorf("attention quality seed %d: section table %+v / want quality's %+v", cfg.Seed, s.Table, want)
	}
	var b bytes.Buffer
	if err := (&report.Report{Title: "t", Sections: []report.Section{s}}).HTML(&b); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{`id="plot-attention-1"`, `id="plot-attention-2"`} {
		if !strings.Contains(b.String(), id) {
			t.Errorf("attention quality seed %d: rendered report lacks %s", cfg.Seed, id)
		}
	}
	cfg.KeepRatios = nil
	if s, err := AttentionQuality(cfg); err == nil || s != nil {
		t.Errorf("attention quality without keep ratios: section %v, err %v / want no section and quality's error", s, err)
	}
}
