package verify

import (
	"encoding/json"
	"math"
	"testing"
)

func TestFloatJSON(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{{1.5, "1.5"}, {math.NaN(), `"NaN"`}, {math.Inf(1), `"+Inf"`}, {math.Inf(-1), `"-Inf"`}, {0, "0"}} {
		b, err := json.Marshal(Float(c.f))
		if err != nil || string(b) != c.want {
			t.Errorf("Float(%v) = %s, %v; want %s", c.f, b, err, c.want)
		}
		var back Float
		if err := json.Unmarshal(b, &back); err != nil || math.Float64bits(float64(back)) != math.Float64bits(c.f) && !(math.IsNaN(c.f) && math.IsNaN(float64(back))) {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", b, float64(back), err, c.f)
		}
	}
}
