//go:build !cgo

// Command cgo needs cgo (go-nvml); built without it, it says so.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "nvml-cgo: built without cgo; build it with CGO_ENABLED=1 (go-nvml needs cgo)")
	os.Exit(2)
}
