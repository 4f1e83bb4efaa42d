// Command floor is the start-up floor of a binary that links purego (the
// NVML-without-cgo candidate, see scripts/nvmlproto/purego): built with
// CGO_ENABLED=0 it only execs true, as scripts/bench.sh's other floors.
// Linking purego makes the binary dynamic (its fakecgo runs the dynamic
// loader and libc's start-up), which is what this measures.
package main

import (
	"os"
	"syscall"

	_ "github.com/ebitengine/purego"
)

func main() { _ = syscall.Exec("/bin/true", []string{"true"}, os.Environ()) }
