//go:build !amd64

package reference

// gonumUnfused: see gonum_amd64.go.
const gonumUnfused = false
