// Package explore is npuverify explore: a generative search for cases a
// backend fails, Hypothesis-style. Cases are drawn from each op's contract
// alone (package ops: ParamSpecs, DimSpecs, Dists; a Validate or Generate
// error means "draw again"), with sizes that mix uniform and log-uniform
// draws with the boundaries of the device (fractals and blocks ±1, UB
// capacity ±1, cores × tile ±1, 2^16 ± 1); each is run and judged through
// the harness with the default policies and invariants; a failure is
// shrunk to a smallest case that still fails the same way, and the
// findings are written as golden store entries (Write) that check --golden
// and run replay. Failures found before (a store, the example database)
// are replayed first.
//
// The package knows no op by name and links no implementation: the device
// facts it needs come as a Device, filled by the CLI from the profile.
package explore

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
)

// Device is what the size boundaries are derived from.
type Device struct {
	UBBytes    int // Unified Buffer bytes per vector core
	BlockBytes int // UB block: the unit of DataCopy lengths (32 bytes)
	Cores      int // vector cores a launch spreads over
	Fractal    int // elements along one side of a cube fractal (16)
	// TileBytes is a per-core UB tile: cores × tile elements is where a
	// kernel's last core gets exactly one full tile. Zero: UBBytes/6
	// (three double-buffered queues, the usual elementwise layout).
	TileBytes int
}

// Limits cap one case so that it cannot eat the budget; large sizes still
// appear, along one dim with the others small.
type Limits struct {
	// MaxElements caps the elements of all inputs together (0: 2^21).
	MaxElements int
	// MaxWork caps the product of a case's required dims, a work estimate
	// (gemm's M·K·N; an over-estimate for the cache ops), checked before
	// any input is generated (0: 2^21).
	MaxWork int
}

func (l Limits) elements() int { return cmp0(l.MaxElements, 1<<21) }
func (l Limits) work() int     { return cmp0(l.MaxWork, 1<<21) }

func cmp0(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// maxDraws bounds the draws Next makes for one legal case: a contract
// whose constraints the generator keeps missing is an error, not a hang.
const maxDraws = 2000

// StreamSeed is the seed of the case stream of one shard: shard 0 (no
// sharding) searches seed itself, shard i of a sharded run a stream of its
// own, so that the shards of one --seed never repeat each other's cases.
func StreamSeed(seed uint64, shard int) uint64 {
	if shard <= 0 {
		return seed
	}
	return splitmix(seed ^ splitmix(uint64(shard)))
}

// splitmix is SplitMix64's finaliser: a bijection that spreads nearby
// seeds apart.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Generator draws the legal cases of one op from a seeded stream: the
// sequence of cases is a function of (op, stream seed, device, limits)
// alone.
type Generator struct {
	op     ops.Op
	dev    Device
	lim    Limits
	seed   uint64
	rng    *rand.Rand
	n      int // cases returned so far
	Drawn  int // draws made (legal or not)
	bounds []int
}

// NewGenerator returns the generator of op's cases for stream seed seed
// (StreamSeed of the --seed and the shard).
func NewGenerator(op ops.Op, dev Device, lim Limits, seed uint64) *Generator {
	h := fnv.New64a()
	h.Write([]byte(op.Name()))
	return &Generator{op: op, dev: dev, lim: lim, seed: seed, rng: rand.New(rand.NewPCG(seed, h.Sum64())), bounds: Boundaries(dev)}
}

// CaseName is the stable name of the n-th case (from 0) of the stream of
// seed: explore-<seed>-<n>.
func CaseName(seed uint64, n int) string { return fmt.Sprintf("explore-%d-%d", seed, n) }

// Boundaries are the sizes where kernels change behaviour on dev, in
// elements of 1-, 2- and 4-byte dtypes, each with its neighbours ±1,
// sorted and without duplicates: fractals (16) and 32-byte blocks, UB
// capacity, cores × tile and cores × fractal, and 2^16.
func Boundaries(dev Device) []int {
	var base []int
	add := func(v int) {
		if v > 0 {
			base = append(base, v)
		}
	}
	fr := cmp0(dev.Fractal, 16)
	add(fr)
	add(2 * fr)
	add(1 << 16)
	tile := dev.TileBytes
	if tile <= 0 {
		tile = dev.UBBytes / 6
	}
	for _, size := range []int{1, 2, 4} {
		add(dev.BlockBytes / size)
		add(dev.UBBytes / size)
		add(dev.Cores * tile / size)
	}
	add(dev.Cores * fr)
	add(dev.Cores)
	var out []int
	for _, b := range base {
		out = append(out, b-1, b, b+1)
	}
	sort.Ints(out)
	return slices.Compact(out)
}

// Next returns the next legal case of the stream, prepared (validated,
// inputs generated and held to the contract). Draws that the contract
// rejects, or that exceed the limits, are drawn again.
func (g *Generator) Next() (*harness.Prepared, error) {
	for range maxDraws {
		g.Drawn++
		c := g.draw()
		c.Name = CaseName(g.seed, g.n)
		pc, ok := Legal(c, g.lim)
		if !ok {
			continue
		}
		g.n++
		return pc, nil
	}
	return nil, fmt.Errorf("explore: %s: no legal case in %d draws from its contract", g.op.Name(), maxDraws)
}

// Legal prepares c and reports whether it is a legal case within lim: its
// params validate, its inputs generate and hold to the contract, and its
// size is under the caps.
func Legal(c ops.Case, lim Limits) (*harness.Prepared, bool) {
	op, err := ops.Lookup(c.Op)
	if err != nil {
		return nil, false
	}
	work := 1
	for _, d := range op.DimSpecs() {
		v, ok := c.Dims[d.Name]
		if !ok || d.Optional {
			continue
		}
		if v > 0 && work > lim.work()/v {
			return nil, false
		}
		work *= max(v, 1)
	}
	if !dimsLegal(op, c.Dims) {
		return nil, false
	}
	pc, err := prepare(c)
	if err != nil {
		return nil, false
	}
	n := 0
	for _, t := range pc.Inputs {
		n += t.Len()
	}
	if n > lim.elements() {
		return nil, false
	}
	return pc, true
}

// dimsLegal holds dims to the DimSpecs' constraints.
func dimsLegal(op ops.Op, dims map[string]int) bool {
	for _, d := range op.DimSpecs() {
		v, ok := dims[d.Name]
		if !ok {
			if d.Optional {
				continue
			}
			return false
		}
		if v < d.Min || (d.Multiple > 1 && v%d.Multiple != 0) {
			return false
		}
		if d.MultipleOf != "" {
			if w := dims[d.MultipleOf]; w <= 0 || v%w != 0 {
				return false
			}
		}
	}
	return true
}

// draw makes one candidate case: every param at a random value (its
// default a third of the time), every dim drawn, made legal by the op's
// Fit when it has one (ops.CaseFitter), a dist and a case seed.
func (g *Generator) draw() ops.Case {
	c := ops.Case{Op: g.op.Name(), Params: ops.Params{}, Dims: map[string]int{}, Labels: []string{"explore", "op:" + g.op.Name()}}
	for _, p := range g.op.ParamSpecs() {
		vals := p.Values
		if vals == nil {
			vals = p.Examples
		}
		if len(vals) == 0 || g.rng.IntN(3) == 0 {
			continue // the default
		}
		c.Params[p.Name] = vals[g.rng.IntN(len(vals))]
	}
	specs := g.op.DimSpecs()
	big := g.rng.IntN(len(specs) + 1) // the one dim that may be large (none: len)
	for i, d := range specs {
		if d.Optional && g.rng.IntN(2) == 0 {
			continue
		}
		c.Dims[d.Name] = g.size(d, i == big)
	}
	for _, d := range specs {
		if _, ok := c.Dims[d.Name]; ok && d.MultipleOf != "" {
			// A small multiple of the other dim (GQA: Hq = h·groups).
			c.Dims[d.Name] = max(c.Dims[d.MultipleOf], 1) * []int{1, 1, 2, 3, 4, 8}[g.rng.IntN(6)]
		}
	}
	if f, ok := g.op.(ops.CaseFitter); ok {
		f.Fit(c.Params, c.Dims, func(name string) int {
			for _, d := range specs {
				if d.Name == name {
					return g.size(d, false)
				}
			}
			return 1
		})
	}
	dists := g.op.Dists()
	c.Dist = dists[g.rng.IntN(len(dists))]
	// 32 bits, as ops.CaseSeed's: every JSON reader (float64 ones too)
	// keeps them exactly.
	c.Seed = uint64(g.rng.Uint32())
	return c
}

// size draws one dim. The one dim allowed to be large: small (up to 40
// above the minimum, skewed toward it) half
// the time, a device boundary a quarter, log-uniform up to 2^17 a quarter;
// any other: small, or a boundary up to 64 a quarter of the time.
// Then held to the spec's minimum and multiple.
func (g *Generator) size(d ops.DimSpec, large bool) int {
	var v int
	switch r := g.rng.IntN(4); {
	case r < 2 || (!large && r < 3):
		v = d.Min + g.rng.IntN(g.rng.IntN(41)+1) // skewed toward the minimum
	case !large:
		i, _ := slices.BinarySearch(g.bounds, 65)
		v = g.bounds[g.rng.IntN(max(i, 1))]
	case r == 2:
		v = g.bounds[g.rng.IntN(len(g.bounds))]
	default:
		v = int(math.Exp2(g.rng.Float64() * 17))
	}
	return legalSize(d, v)
}

// legalSize rounds v to d's multiple (to the nearest, up on a tie) and
// raises it to d's minimum.
func legalSize(d ops.DimSpec, v int) int {
	if m := d.Multiple; m > 1 {
		v = (v + m/2) / m * m
	}
	if v < d.Min {
		v = d.Min
		if m := d.Multiple; m > 1 && v%m != 0 {
			v += m - v%m
		}
	}
	return v
}

// Describe is a case's one-line form in reports: op, params, dims, dist
// and seed.
func Describe(c ops.Case) string {
	keys := make([]string, 0, len(c.Dims))
	for k := range c.Dims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := c.Op
	if len(c.Params) > 0 {
		s += " " + c.Params.String()
	}
	for _, k := range keys {
		s += " " + k + "=" + strconv.Itoa(c.Dims[k])
	}
	return fmt.Sprintf("%s dist=%s seed=%d", s, c.Dist, c.Seed)
}

// prepare is harness.Prepare with a panic of the contract's Generate (a
// bug in package ops: it must refuse sizes with an error) turned into a
// refusal that names the case, so that one such draw cannot end the
// process from a search goroutine; the generator then draws again.
func prepare(c ops.Case) (pc *harness.Prepared, err error) {
	defer func() {
		if r := recover(); r != nil {
			pc, err = nil, fmt.Errorf("explore: %s: Generate panicked on %s: %v", c.Op, Describe(c), r)
		}
	}()
	return harness.Prepare(c)
}
