package npu

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/npuverify/npuverify/safefile"
	"github.com/npuverify/npuverify/tensor"
)

// Profile describes an emulated device: core counts, clock, on-chip
// memories, cube and vector throughput, HBM bandwidth, alignment rules,
// the two cost-model constants (DMA latency, vector issue overhead) and
// the numerics. It is plain data: load it from JSON with LoadProfile or
// ParseProfile (every hardware field must be present; numerics default to
// IEEE), or start from a named profile (ProfileByName) and edit a copy.
type Profile struct {
	Name string `json:"name"`

	AICores     int     `json:"ai_cores"`     // cube (AIC) cores
	VectorCores int     `json:"vector_cores"` // vector (AIV) cores; Launch runs up to this many blocks
	ClockGHz    float64 `json:"clock_ghz"`

	UBBytes      int `json:"ub_bytes"`       // Unified Buffer per vector core
	UBBlockBytes int `json:"ub_block_bytes"` // UB block: the unit of DataCopy lengths and allocations
	L1Bytes      int `json:"l1_bytes"`
	L0ABytes     int `json:"l0a_bytes"`
	L0BBytes     int `json:"l0b_bytes"`
	L0CBytes     int `json:"l0c_bytes"`

	CubeFP16 Fractal `json:"cube_fractal_fp16"` // one cube step on fp16/bf16 inputs
	CubeInt8 Fractal `json:"cube_fractal_int8"` // one cube step on int8 inputs

	VectorBytesPerCycle int     `json:"vector_bytes_per_cycle"` // per core: bytes of one vector repeat
	HBMGBps             float64 `json:"hbm_gbps"`               // GM (HBM) bandwidth shared by all cores, 1e9 B/s

	// L2 is the on-chip cache between GM (HBM) and the cores, optional:
	// a profile without the three fields (all zero) has no L2, and every
	// transfer moves at the core's share of HBM (DMABytesPerCycle) after
	// DMALatencyCycles, as before L2 was modelled. With L2, every GM
	// transfer travels the core's L2 port (L2LatencyCycles + bytes /
	// L2BytesPerCycle) and the launch's HBM traffic (the distinct GM
	// blocks it reads and writes, when they fit L2Bytes) bounds its
	// cycles at the HBM bandwidth (l2.go).
	L2Bytes         int64 `json:"l2_bytes,omitempty"`           // L2 capacity shared by all cores
	L2BytesPerCycle int   `json:"l2_bytes_per_cycle,omitempty"` // one core's L2 port, bytes per core cycle
	L2LatencyCycles int   `json:"l2_latency_cycles,omitempty"`  // fixed cost of one transfer through L2

	Align Alignment `json:"align"`

	// DMALatencyCycles is the fixed cost of one GM↔local transfer, added to
	// its bandwidth time.
	DMALatencyCycles int `json:"dma_latency_cycles"`
	// VectorIssueCycles is the fixed cost of issuing one vector instruction,
	// added to its repeat count.
	VectorIssueCycles int `json:"vector_issue_cycles"`

	Numerics tensor.Numerics `json:"numerics"`
}

// Fractal is the shape of one cube step: an [M,K]·[K,N] matrix product
// per cycle, M·K·N multiply-accumulates.
type Fractal struct {
	M int `json:"m"`
	K int `json:"k"`
	N int `json:"n"`
}

// MACs is M·K·N, the multiply-accumulates of one cube step.
func (f Fractal) MACs() int { return f.M * f.K * f.N }

// Alignment holds the address and length alignment, in bytes, of each
// on-chip memory.
type Alignment struct {
	UB  int `json:"ub"`
	L1  int `json:"l1"`
	L0A int `json:"l0a"`
	L0B int `json:"l0b"`
	L0C int `json:"l0c"`
}

// Ascend910B returns the default profile "ascend910b": 24 AI (cube)
// cores and 48 vector cores at 1.8 GHz, UB 192 KiB per core in 32-byte
// blocks, L1 512 KiB, L0A/L0B 64 KiB, L0C 128 KiB, cube fractals
// 16×16×16 (fp16) and 16×32×16 (int8), 256 B per vector cycle, HBM
// 1.6 TB/s shared, alignment UB/L1 32 B, L0A/L0B 512 B, L0C 64 B, a DMA
// latency of 500 cycles, a vector issue overhead of 8 cycles, and IEEE
// numerics (inf on overflow, subnormals kept, int8 ties to even).
//
// Its L2, and where each figure comes from (Huawei publishes no L2
// datasheet for 910B, so each is a stated derivation, not a measurement):
//   - capacity 192 MiB: the figure commonly quoted for the 910B
//     generation (Atlas A2); the 910 of Hot Chips 31 (2019) had 32 MiB.
//   - port 128 bytes per core cycle: the Hot Chips 31 talk on Ascend 910
//     describes the cores' on-chip network as a 1024-bit mesh at 2 GHz,
//     1024 bits = 128 bytes per NoC cycle into each core. The NoC clock
//     (2 GHz) is above the core's 1.8 GHz, which would give 142 bytes
//     per core cycle; the model takes the 128 bytes of one flit per core
//     cycle, the smaller figure.
//   - latency 200 cycles per transfer: no Ascend figure is published;
//     it is the L2 hit latency measured on the data-centre accelerator of
//     the same class and clock (NVIDIA V100 at 1.38–1.53 GHz: 193 cycles,
//     Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
//     Microbenchmarking", 2018), rounded up. The 500 cycles of a
//     transfer without L2 (DMALatencyCycles) include the HBM access an L2
//     hit does not make.
func Ascend910B() Profile {
	return Profile{
		Name:                "ascend910b",
		AICores:             24,
		VectorCores:         48,
		ClockGHz:            1.8,
		UBBytes:             192 << 10,
		UBBlockBytes:        32,
		L1Bytes:             512 << 10,
		L0ABytes:            64 << 10,
		L0BBytes:            64 << 10,
		L0CBytes:            128 << 10,
		CubeFP16:            Fractal{M: 16, K: 16, N: 16},
		CubeInt8:            Fractal{M: 16, K: 32, N: 16},
		VectorBytesPerCycle: 256,
		HBMGBps:             1600,
		Align:               Alignment{UB: 32, L1: 32, L0A: 512, L0B: 512, L0C: 64},
		DMALatencyCycles:    500,
		VectorIssueCycles:   8,
		L2Bytes:             192 << 20,
		L2BytesPerCycle:     128,
		L2LatencyCycles:     200,
	}
}

var profiles = map[string]func() Profile{
	"ascend910b": Ascend910B,
}

// ProfileNames lists the built-in profile names, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ProfileByName returns a fresh copy of a built-in profile.
func ProfileByName(name string) (Profile, error) {
	f, ok := profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("unknown device profile %q (want one of %s)", name, strings.Join(ProfileNames(), ", "))
	}
	return f(), nil
}

// LoadProfile reads and validates a JSON profile file.
func LoadProfile(path string) (Profile, error) {
	b, err := safefile.ReadFile(path, 1<<20) // a profile is a few KiB; no link, FIFO or device
	if err != nil {
		return Profile{}, fmt.Errorf("profile %s: %w", path, err)
	}
	p, err := ParseProfile(b)
	if err != nil {
		return Profile{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// ParseProfile decodes and validates a JSON profile. Unknown fields,
// trailing data and invalid values are errors naming the JSON field.
func ParseProfile(b []byte) (Profile, error) {
	var p Profile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Profile{}, fmt.Errorf("profile: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Profile{}, errors.New("profile: trailing data after the JSON object")
	}
	if err := p.Validate(); err != nil {
		return Profile{}, err
	}
	return p, nil
}

// JSON returns the profile as indented JSON, the form ParseProfile reads.
func (p Profile) JSON() ([]byte, error) { return json.MarshalIndent(p, "", "  ") }

// Profile limits: past them a profile is an input error naming the field
// and the limit. They are far beyond any device (whose fractals are 16 or
// 32 a side, alignments at most 512 B, memories at most a few MiB) and
// keep the emulator's work and memory bounded: a fractal of 2^40 made the
// tiling's sizes overflow, and per-step costs past MaxProfileCycles would
// overflow the int64 cycle counters of a long launch.
const (
	MaxProfileCores   = 4096    // ai_cores, vector_cores
	MaxProfileMemory  = 1 << 30 // each local memory, bytes (Buffer keeps offsets in int32)
	MaxProfileFractal = 128     // each side of a cube fractal (gemm24 needs 2·k ≤ 256)
	MaxProfileAlign   = 4096    // ub_block_bytes and every align.*, bytes
	MaxProfileVector  = 1 << 20 // vector_bytes_per_cycle
	MaxProfileCycles  = 1 << 30 // dma_latency_cycles, vector_issue_cycles, l2_latency_cycles
	MaxProfileL2      = 1 << 40 // l2_bytes
	// MinUBBlockBytes is the smallest UB block: one fp32 or int32 element,
	// so that a block holds a whole element of every dtype the kernels
	// copy (a 1-byte block made vector_add's block hold 0 fp16 elements).
	MinUBBlockBytes = 4
)

// profileChecks are the requirements kernel packages place on a profile
// (RegisterProfileCheck), run by Validate after the fields' own checks.
var (
	profileChecksMu sync.Mutex
	profileChecks   []func(Profile) error
)

// RegisterProfileCheck adds a requirement every profile must meet for the
// kernels of the registering package to run at all (package npu/kernels
// registers one: every op's smallest tile fits the device). check gets a
// profile whose fields are valid (ValidateFields) and returns an error
// beginning with the JSON name of the field that falls short, e.g.
// "ub_bytes: 512 cannot hold one tile of sparse24_prune (needs 608)";
// Validate prefixes the profile's name. check must not call Validate.
func RegisterProfileCheck(check func(Profile) error) {
	profileChecksMu.Lock()
	defer profileChecksMu.Unlock()
	profileChecks = append(profileChecks, check)
}

// Validate checks every field (ValidateFields) and then what the
// registered kernels need of the device (RegisterProfileCheck), and
// returns an error naming the first bad field by its JSON name, e.g.
// "profile ascend910b: ub_bytes: must be positive, got 0".
func (p Profile) Validate() error {
	if err := p.ValidateFields(); err != nil {
		return err
	}
	profileChecksMu.Lock()
	checks := profileChecks
	profileChecksMu.Unlock()
	for _, check := range checks {
		if err := check(p); err != nil {
			return fmt.Errorf("profile %s: %w", p.Name, err)
		}
	}
	return nil
}

// ValidateFields checks every field on its own and against the others
// (ranges, powers of two, alignments, the limits above), but not what the
// kernels need of the device: it is what a kernel package's tiling, and
// its RegisterProfileCheck check, may call without recursing into Validate.
func (p Profile) ValidateFields() error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("profile %s: %s: %s", p.Name, field, fmt.Sprintf(format, a...))
	}
	if p.Name == "" {
		return errors.New("profile: name: must not be empty")
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"ai_cores", p.AICores}, {"vector_cores", p.VectorCores},
		{"ub_bytes", p.UBBytes}, {"ub_block_bytes", p.UBBlockBytes},
		{"l1_bytes", p.L1Bytes}, {"l0a_bytes", p.L0ABytes}, {"l0b_bytes", p.L0BBytes}, {"l0c_bytes", p.L0CBytes},
		{"cube_fractal_fp16.m", p.CubeFP16.M}, {"cube_fractal_fp16.k", p.CubeFP16.K}, {"cube_fractal_fp16.n", p.CubeFP16.N},
		{"cube_fractal_int8.m", p.CubeInt8.M}, {"cube_fractal_int8.k", p.CubeInt8.K}, {"cube_fractal_int8.n", p.CubeInt8.N},
		{"vector_bytes_per_cycle", p.VectorBytesPerCycle},
		{"align.ub", p.Align.UB}, {"align.l1", p.Align.L1}, {"align.l0a", p.Align.L0A},
		{"align.l0b", p.Align.L0B}, {"align.l0c", p.Align.L0C},
	} {
		if f.v <= 0 {
			return bad(f.name, "must be positive, got %d", f.v)
		}
	}
	for _, f := range []struct {
		name  string
		v, mx int
	}{
		{"ai_cores", p.AICores, MaxProfileCores}, {"vector_cores", p.VectorCores, MaxProfileCores},
		{"cube_fractal_fp16.m", p.CubeFP16.M, MaxProfileFractal}, {"cube_fractal_fp16.k", p.CubeFP16.K, MaxProfileFractal},
		{"cube_fractal_fp16.n", p.CubeFP16.N, MaxProfileFractal},
		{"cube_fractal_int8.m", p.CubeInt8.M, MaxProfileFractal}, {"cube_fractal_int8.k", p.CubeInt8.K, MaxProfileFractal},
		{"cube_fractal_int8.n", p.CubeInt8.N, MaxProfileFractal},
		{"vector_bytes_per_cycle", p.VectorBytesPerCycle, MaxProfileVector},
		{"dma_latency_cycles", p.DMALatencyCycles, MaxProfileCycles}, {"vector_issue_cycles", p.VectorIssueCycles, MaxProfileCycles},
	} {
		if f.v > f.mx {
			return bad(f.name, "at most %d, got %d", f.mx, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"ub_block_bytes", p.UBBlockBytes}, {"align.ub", p.Align.UB}, {"align.l1", p.Align.L1},
		{"align.l0a", p.Align.L0A}, {"align.l0b", p.Align.L0B}, {"align.l0c", p.Align.L0C},
	} {
		if f.v&(f.v-1) != 0 {
			return bad(f.name, "must be a power of two, got %d", f.v)
		}
		if f.v > MaxProfileAlign {
			return bad(f.name, "at most %d, got %d", MaxProfileAlign, f.v)
		}
	}
	if p.UBBlockBytes < MinUBBlockBytes {
		return bad("ub_block_bytes", "at least %d (one fp32 element), got %d", MinUBBlockBytes, p.UBBlockBytes)
	}
	if p.Align.UB%p.UBBlockBytes != 0 && p.UBBlockBytes%p.Align.UB != 0 {
		return bad("align.ub", "%d is incompatible with ub_block_bytes %d", p.Align.UB, p.UBBlockBytes)
	}
	const maxMem = MaxProfileMemory
	for _, f := range []struct {
		name  string
		v, al int
	}{
		{"ub_bytes", p.UBBytes, p.UBAlign()}, {"l1_bytes", p.L1Bytes, p.Align.L1},
		{"l0a_bytes", p.L0ABytes, p.Align.L0A}, {"l0b_bytes", p.L0BBytes, p.Align.L0B},
		{"l0c_bytes", p.L0CBytes, p.Align.L0C},
	} {
		if f.v > maxMem {
			return bad(f.name, "at most %d, got %d", maxMem, f.v)
		}
		if f.v%f.al != 0 {
			return bad(f.name, "%d is not a multiple of its alignment %d", f.v, f.al)
		}
	}
	// The lower limits keep a transfer's cycles (bytes over the per-core
	// share of HBM per cycle) within int64 for every tensor up to the
	// element cap, even on 4096 cores.
	if !(p.ClockGHz >= 0.01 && p.ClockGHz < 1e3) {
		return bad("clock_ghz", "must be in [0.01, 1000), got %v", p.ClockGHz)
	}
	if !(p.HBMGBps >= 1 && p.HBMGBps < 1e9) {
		return bad("hbm_gbps", "must be in [1, 1e9), got %v", p.HBMGBps)
	}
	if p.DMALatencyCycles < 0 {
		return bad("dma_latency_cycles", "must not be negative, got %d", p.DMALatencyCycles)
	}
	if p.VectorIssueCycles < 0 {
		return bad("vector_issue_cycles", "must not be negative, got %d", p.VectorIssueCycles)
	}
	if err := p.validateL2(); err != nil {
		return bad(err.field, "%s", err.msg)
	}
	if p.Numerics.Overflow > tensor.OverflowSaturate {
		return bad("numerics.overflow", "invalid value %d", p.Numerics.Overflow)
	}
	if p.Numerics.Subnormals > tensor.SubnormalFlush {
		return bad("numerics.subnormals", "invalid value %d", p.Numerics.Subnormals)
	}
	if p.Numerics.Int8Rounding > tensor.RoundHalfAway {
		return bad("numerics.int8_rounding", "invalid value %d", p.Numerics.Int8Rounding)
	}
	return nil
}

// fieldError is a profile field's problem, named by its JSON name.
type fieldError struct{ field, msg string }

// validateL2 checks the optional L2 fields: all absent (zero), or a
// capacity with a port of positive width and a latency that is not
// negative.
func (p Profile) validateL2() *fieldError {
	if p.L2Bytes == 0 {
		if p.L2BytesPerCycle != 0 || p.L2LatencyCycles != 0 {
			return &fieldError{"l2_bytes", "must be set when l2_bytes_per_cycle or l2_latency_cycles is (a profile without L2 has none of the three)"}
		}
		return nil
	}
	switch {
	case p.L2Bytes < 0 || p.L2Bytes > MaxProfileL2:
		return &fieldError{"l2_bytes", fmt.Sprintf("must be in [1, %d] (or absent: no L2), got %d", int64(MaxProfileL2), p.L2Bytes)}
	case p.L2BytesPerCycle <= 0 || p.L2BytesPerCycle > MaxProfileVector:
		return &fieldError{"l2_bytes_per_cycle", fmt.Sprintf("must be in [1, %d] with l2_bytes, got %d", MaxProfileVector, p.L2BytesPerCycle)}
	case p.L2LatencyCycles < 0 || p.L2LatencyCycles > MaxProfileCycles:
		return &fieldError{"l2_latency_cycles", fmt.Sprintf("must be in [0, %d], got %d", MaxProfileCycles, p.L2LatencyCycles)}
	}
	return nil
}

// HasL2 reports whether the profile models an L2 (l2_bytes set).
func (p Profile) HasL2() bool { return p.L2Bytes > 0 }

// GMPath is what one GM transfer of a core of kind k costs beyond its
// bursts: the bytes per cycle it moves and its fixed latency. With L2
// they are the core's L2 port and the L2 latency; without, the core's
// share of HBM (DMABytesPerCycle) and DMALatencyCycles. Host-side
// tilings that price their transfers use it, as chargeDMA does.
func (p Profile) GMPath(k CoreKind) (bytesPerCycle float64, latency int) {
	if p.HasL2() {
		return float64(p.L2BytesPerCycle), p.L2LatencyCycles
	}
	return p.DMABytesPerCycle(k), p.DMALatencyCycles
}

// HBMBytesPerCycle is the whole HBM bandwidth in bytes per core cycle,
// the rate at which a launch's HBM traffic drains (l2.go).
func (p Profile) HBMBytesPerCycle() float64 { return p.HBMGBps / p.ClockGHz }

// ClockHz is the core clock in Hz.
func (p Profile) ClockHz() float64 { return p.ClockGHz * 1e9 }

// Cores returns how many cores of a kind the device has.
func (p Profile) Cores(k CoreKind) int {
	if k == AICore {
		return p.AICores
	}
	return p.VectorCores
}

// DMABytesPerCycle is one core's share of the HBM bandwidth, in bytes per
// cycle: HBM bandwidth / clock / number of cores of that kind. Every core
// gets its share whether or not the others are busy, so a core's DMA time
// does not depend on how many cores were launched.
func (p Profile) DMABytesPerCycle(k CoreKind) float64 {
	return p.HBMGBps / p.ClockGHz / float64(p.Cores(k))
}

// UBAlign is the alignment of UB addresses and DataCopy lengths in bytes:
// the larger of align.ub and ub_block_bytes (32 on ascend910b).
func (p Profile) UBAlign() int { return max(p.Align.UB, p.UBBlockBytes) }

// spaceSize returns the capacity and alignment of a local memory.
func (p Profile) spaceSize(s Space) (capacity, align int) {
	switch s {
	case UB:
		return p.UBBytes, p.UBAlign()
	case L1:
		return p.L1Bytes, p.Align.L1
	case L0A:
		return p.L0ABytes, p.Align.L0A
	case L0B:
		return p.L0BBytes, p.Align.L0B
	case L0C:
		return p.L0CBytes, p.Align.L0C
	}
	return 0, 1
}
