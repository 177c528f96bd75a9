package bound

// The special-class algebra: an Interval's outcomes are split into single
// kinds (its finite part's sign, and whether it can be zero; each
// non-finite class), and an operation's non-finite classes are the union
// of IEEE's result over every pair of kinds its operands can take.

// The outcome kinds of a value.
const (
	kPos uint8 = 1 << iota
	kNeg
	kZero
	kPinf
	kNinf
	kNaN
)

// kinds returns the set of kinds v's outcomes can take.
func (v Interval) kinds() uint8 {
	var k uint8
	if v.Finite {
		if v.Ref+v.Err > 0 {
			k |= kPos
		}
		if v.Ref-v.Err < 0 {
			k |= kNeg
		}
		if v.Ref-v.Err <= 0 && 0 <= v.Ref+v.Err {
			k |= kZero
		}
	}
	if v.Alt&PosInf != 0 {
		k |= kPinf
	}
	if v.Alt&NegInf != 0 {
		k |= kNinf
	}
	if v.Alt&NaN != 0 {
		k |= kNaN
	}
	return k
}

func isInfKind(k uint8) bool { return k == kPinf || k == kNinf }

// isNegKind reports whether a single kind is negative (zero counts as
// neither: its sign is unknown).
func isNegKind(k uint8) bool { return k == kNeg || k == kNinf }

// mulKind is the non-finite class of p·q for single kinds (0 if finite).
func mulKind(p, q uint8) Special {
	if p == kNaN || q == kNaN {
		return NaN
	}
	if !isInfKind(p) && !isInfKind(q) {
		return 0
	}
	if p == kZero || q == kZero {
		return NaN
	}
	if isNegKind(p) != isNegKind(q) {
		return NegInf
	}
	return PosInf
}

// addKind is the non-finite class of p+q for single kinds (0 if finite).
func addKind(p, q uint8) Special {
	switch {
	case p == kNaN || q == kNaN:
		return NaN
	case isInfKind(p) && isInfKind(q):
		if p != q {
			return NaN
		}
		return kindClass(p)
	case isInfKind(p):
		return kindClass(p)
	case isInfKind(q):
		return kindClass(q)
	}
	return 0
}

// divKind is the set of non-finite classes of p/q for single kinds:
// Inf/Inf and 0/0 are NaN, x/0 is ±Inf (the sign of a zero is unknown, so
// both), finite/Inf is a finite zero.
func divKind(p, q uint8) Special {
	switch {
	case p == kNaN || q == kNaN:
		return NaN
	case isInfKind(p) && isInfKind(q):
		return NaN
	case isInfKind(q):
		return 0
	case q == kZero:
		if p == kZero {
			return NaN
		}
		return PosInf | NegInf
	case isInfKind(p):
		if isNegKind(p) != isNegKind(q) {
			return NegInf
		}
		return PosInf
	}
	return 0
}

// kindClass maps a non-finite single kind to its class.
func kindClass(k uint8) Special {
	switch k {
	case kPinf:
		return PosInf
	case kNinf:
		return NegInf
	case kNaN:
		return NaN
	}
	return 0
}

// kindTable holds an operation's classes for every pair of kind sets
// (6 bits each): the union of its single-kind rule over every pair of
// kinds in the two sets (the test's combineKinds), so that an
// interval operation looks its classes up instead of walking the pairs
// (the walk, with a call per pair, was 5% of a FuzzGEMM worker's samples,
// on the interval path of elements with special values).
type kindTable [1 << 6][1 << 6]Special

// newKindTable tabulates the union of f over the kind pairs: f itself on
// pairs of single kinds, and the union of two smaller sets' entries
// elsewhere (a union over pairs splits over the kinds of either set), so
// that building the three tables costs every process that links this
// package a few microseconds at start, not the milliseconds of walking
// the pairs of each of 4,096 entries.
func newKindTable(f func(p, q uint8) Special) *kindTable {
	var t kindTable
	for ka := 1; ka < len(t); ka++ {
		pa := ka & -ka // ka's lowest kind
		for kb := 1; kb < len(t[ka]); kb++ {
			pb := kb & -kb
			switch {
			case ka != pa:
				t[ka][kb] = t[pa][kb] | t[ka^pa][kb]
			case kb != pb:
				t[ka][kb] = t[ka][pb] | t[ka][kb^pb]
			default:
				t[ka][kb] = f(uint8(ka), uint8(kb))
			}
		}
	}
	return &t
}

// The tables of Mul, Add and Div.
var (
	mulKinds = newKindTable(mulKind)
	addKinds = newKindTable(addKind)
	divKinds = newKindTable(divKind)
)

// combine is the union of t's rule over every pair of kinds a and b can
// take.
func combine(a, b Interval, t *kindTable) Special { return t[a.kinds()][b.kinds()] }
