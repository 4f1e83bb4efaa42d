// Package nvlib holds gpunode's conformance tests against NVIDIA go-nvlib
// (github.com/NVIDIA/go-nvlib, fetched through the Go module proxy). It is a
// module of its own so that the product never depends on go-nvlib.
//
// Current mig-parted checks the MIG profile names of a config file with
// go-nvlib's pkg/nvlib/device. TestProfileSpellingDifferential feeds the same
// strings to gpunode's mig.ParseMigProfile and to go-nvlib and requires the
// same verdict, the same error text and the same parts (compute and
// GPU-instance slices, memory, attributes). The strings are a corpus
// (gpunode's catalogue, mig-parted's published configs, hand-picked edge
// cases) plus -cases random strings grown from the profile grammar and then
// mutated.
//
// go-nvlib's parser is unexported; the test reaches it through
// Interface.AssertValidMigProfileFormat (verdict and text) and
// MigProfileInfo.Matches, which parses its argument and compares every part
// with the receiver's (attributes as sets).
package nvlib
