// Package yaml holds gpunode's conformance tests of internal/yamljson
// against sigs.k8s.io/yaml v1.6.0 (and, through it, go.yaml.in/yaml/v2
// v2.4.x), fetched through the Go module proxy. It is a module of its own
// so that the node binary's module graph need not keep sigs.k8s.io/yaml
// for this.
//
// internal/yamljson reads YAML with yaml v3's parser and yaml v2's YAML 1.1
// rules, so that cmd/gpunode links no yaml v2. For every input the tests
// compare YAMLToJSON, YAMLToJSONStrict and JSONToYAML byte for byte, the
// verdicts and decoded values of Unmarshal and UnmarshalStrict into several
// Go types (interface{}, maps, a struct with embedded, pointer, named and
// RawMessage fields, gpu.Status, mig.MigPartedSpec), and Marshal of the
// decoded JSON byte for byte. The inputs:
//
//   - TestCorpus: the repository's YAML fixtures (fake GPU files,
//     mig-parted configs, tune profiles, deploy/ and k8s test files) and
//     hand-written edge cases of each YAML 1.1 rule;
//   - TestRandomDocuments: -cases documents generated from a grammar of
//     tricky scalars, tags, anchors, aliases, merge keys and block and flow
//     collections, every second one mutated byte-wise;
//   - FuzzDifferential: the same comparison under go test -fuzz.
//
// A disagreement fails unless it is one of the known differences listed in
// internal/yamljson's package doc (TestKnownDifferences pins each one, so
// that a fixed difference leaves the list). BenchmarkYAMLToJSON times both
// on mig-parted's default config.
package yaml
