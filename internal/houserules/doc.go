// Package houserules holds no product code: its tests enforce rules of the
// repository that a compiler cannot, so that they do not come back once mended.
//
//   - Provenance: no file in the product, test or conformance trees says it
//     carries another project's code (an upstream licence header, a
//     copyright line of another project, or a note that a file was
//     taken over from upstream as it was). gpunode's code is written here; equality with upstream is
//     proven by differential tests in the conformance modules, which import
//     upstream as a dependency instead of copying it.
//
// Quoting an upstream message as the text kubelet or mig-parted prints stays
// allowed: such strings live in one quotes.go per package, named as quotes.
package houserules
