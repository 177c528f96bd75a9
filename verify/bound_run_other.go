//go:build !amd64 || purego

package verify

import "github.com/npuverify/npuverify/bound"

// boundRunAVX2 is never called here (useAVX2 is false).
func boundRunAVX2(*boundRunVec, *float64, *float64, *float64, *bound.Special, int) int { return 0 }
