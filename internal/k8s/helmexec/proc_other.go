//go:build !unix

package helmexec

import "os/exec"

// ownProcessGroup: the default, which kills the helper alone.
func ownProcessGroup(*exec.Cmd) {}
