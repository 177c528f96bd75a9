//go:build !linux

package backend

// enableSubreaper does nothing where there are no child subreapers.
func enableSubreaper() {}

// tracker follows nothing where /proc and subreapers are not available:
// the process group kill is all there is.
type tracker struct{}

func track(int, string) *tracker { return &tracker{} }

// kill kills the command's process group only.
func (*tracker) kill(killGroup func()) { killGroup() }

func (*tracker) stop() {}
