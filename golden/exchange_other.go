//go:build !linux

package golden

// exchange reports that no atomic directory exchange is available here;
// writeCase then uses the two-rename protocol.
func exchange(a, b string) (bool, error) { return false, nil }
