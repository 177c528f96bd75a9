package verify

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/npuverify/npuverify/bound"
)

// JSON: encoding/json rejects NaN and ±Inf, which metrics legitimately
// hold (Tightness +Inf for an error against a zero bound, a NaN got in
// Worst). Metrics and Element therefore encode non-finite numbers as the
// strings "NaN", "+Inf" and "-Inf", and decode them back.

// Float is a float64 whose JSON form admits non-finite values: NaN and
// ±Inf are written as the strings "NaN", "+Inf" and "-Inf" and read back.
// Every JSON file npuverify writes (reports, case.json) uses it for
// metrics, so one definition serves them all.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	x := float64(f)
	switch {
	case math.IsNaN(x):
		return []byte(`"NaN"`), nil
	case math.IsInf(x, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(x, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *Float) UnmarshalJSON(b []byte) error {
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		switch s {
		case "NaN":
			*f = Float(math.NaN())
		case "+Inf", "Inf":
			*f = Float(math.Inf(1))
		case "-Inf":
			*f = Float(math.Inf(-1))
		default:
			return fmt.Errorf("verify: bad number %q", s)
		}
		return nil
	}
	x, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("verify: bad number %s", b)
	}
	*f = Float(x)
	return nil
}

type elementJSON struct {
	Index int    `json:"index"`
	Got   Float  `json:"got"`
	Ref   Float  `json:"ref"`
	Bound Float  `json:"bound"`
	Alt   string `json:"alt,omitempty"`
	Note  string `json:"note,omitempty"`
}

// MarshalJSON encodes e with snake_case keys, non-finite numbers as
// strings and Alt as e.g. "+inf|nan" (omitted when empty).
func (e Element) MarshalJSON() ([]byte, error) {
	j := elementJSON{Index: e.Index, Got: Float(e.Got), Ref: Float(e.Ref), Bound: Float(e.Bound), Note: e.Note}
	if e.Alt != 0 {
		j.Alt = e.Alt.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (e *Element) UnmarshalJSON(b []byte) error {
	var j elementJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	alt, err := parseSpecial(j.Alt)
	if err != nil {
		return err
	}
	*e = Element{Index: j.Index, Got: float64(j.Got), Ref: float64(j.Ref), Bound: float64(j.Bound), Alt: alt, Note: j.Note}
	return nil
}

func parseSpecial(s string) (bound.Special, error) {
	var out bound.Special
	if s == "" || s == "finite" {
		return 0, nil
	}
	for _, part := range strings.Split(s, "|") {
		switch part {
		case "+inf":
			out |= bound.PosInf
		case "-inf":
			out |= bound.NegInf
		case "nan":
			out |= bound.NaN
		default:
			return 0, fmt.Errorf("verify: bad non-finite class %q", part)
		}
	}
	return out, nil
}

type metricsJSON struct {
	N                 int            `json:"n"`
	Compared          int            `json:"compared"`
	MaxAbs            Float          `json:"max_abs"`
	MaxRel            Float          `json:"max_rel"`
	MERE              Float          `json:"mere"`
	MARE              Float          `json:"mare"`
	RMSE              Float          `json:"rmse"`
	Cosine            Float          `json:"cosine"`
	UlpHist           map[string]int `json:"ulp_hist"`
	ErrRatio1e3       Float          `json:"err_ratio_1e-3"`
	ErrRatio5e3       Float          `json:"err_ratio_5e-3"`
	Tightness         Float          `json:"tightness"`
	NonFiniteMismatch int            `json:"nonfinite_mismatch"`
	Ambiguous         int            `json:"ambiguous"`
	AmbiguousTaken    int            `json:"ambiguous_taken"`
	OutOfBound        int            `json:"out_of_bound"`
	NotRounded        int            `json:"not_rounded"`
	Worst             []Element      `json:"worst"`
}

// MarshalJSON encodes m with snake_case keys and non-finite numbers as
// strings (see the note above Float).
func (m Metrics) MarshalJSON() ([]byte, error) {
	j := metricsJSON{
		N: m.N, Compared: m.Compared,
		MaxAbs: Float(m.MaxAbs), MaxRel: Float(m.MaxRel), MERE: Float(m.MERE), MARE: Float(m.MARE),
		RMSE: Float(m.RMSE), Cosine: Float(m.Cosine), UlpHist: m.UlpHist,
		ErrRatio1e3: Float(m.ErrRatio1e3), ErrRatio5e3: Float(m.ErrRatio5e3), Tightness: Float(m.Tightness),
		NonFiniteMismatch: m.NonFiniteMismatch, Ambiguous: m.Ambiguous, AmbiguousTaken: m.AmbiguousTaken,
		OutOfBound: m.OutOfBound, NotRounded: m.NotRounded, Worst: m.Worst,
	}
	if j.UlpHist == nil {
		j.UlpHist = map[string]int{}
	}
	if j.Worst == nil {
		j.Worst = []Element{}
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (m *Metrics) UnmarshalJSON(b []byte) error {
	var j metricsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = Metrics{
		N: j.N, Compared: j.Compared,
		MaxAbs: float64(j.MaxAbs), MaxRel: float64(j.MaxRel), MERE: float64(j.MERE), MARE: float64(j.MARE),
		RMSE: float64(j.RMSE), Cosine: float64(j.Cosine), UlpHist: j.UlpHist,
		ErrRatio1e3: float64(j.ErrRatio1e3), ErrRatio5e3: float64(j.ErrRatio5e3), Tightness: float64(j.Tightness),
		NonFiniteMismatch: j.NonFiniteMismatch, Ambiguous: j.Ambiguous, AmbiguousTaken: j.AmbiguousTaken,
		OutOfBound: j.OutOfBound, NotRounded: j.NotRounded, Worst: j.Worst,
	}
	if len(m.Worst) == 0 {
		m.Worst = nil
	}
	return nil
}
