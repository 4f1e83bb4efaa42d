// Package yamljson reads and writes YAML as sigs.k8s.io/yaml does, on
// go.yaml.in/yaml/v3, so that the node binary (cmd/gpunode) links neither
// sigs.k8s.io/yaml nor go.yaml.in/yaml/v2, whose package initialiser was
// the largest of the binary's start (issue 29 item 5). The k8s packages,
// linked by gpunode-full only, keep sigs.k8s.io/yaml.
//
// What it offers, each with sigs.k8s.io/yaml's semantics:
//
//	YAMLToJSON, YAMLToJSONStrict   YAML (first document) -> JSON bytes
//	Unmarshal, UnmarshalStrict     YAML -> JSON -> encoding/json into a Go value
//	Marshal, JSONToYAML            Go value -> encoding/json -> YAML
//
// Reading. yaml v3 parses the text into a node tree (so errors keep yaml's
// "yaml: line N: ..." form, which internal/yamlpos reads); the tree is then
// resolved with the YAML 1.1 rules of yaml v2, which sigs.k8s.io/yaml uses:
//
//   - a plain scalar is null for "", "~", "null", "Null", "NULL"; a boolean
//     for y, Y, yes, Yes, YES, n, N, no, No, NO, true, True, TRUE, false,
//     False, FALSE, on, On, ON, off, Off, OFF; an integer for what Go's
//     strconv reads with base prefix 0x, 0o, 0b or a leading 0 (octal),
//     after every "_" is removed (1_000, 0x1F, 017, 0o17, 0b101, +12); a
//     float for [-+]?(.D+|D+(.D*)?)([eE][-+]?D+)? and .inf, -.inf, .nan
//     in their three casings; a decimal too large for 64 bits is a float;
//     anything else, timestamps included, is the string as written;
//   - a quoted, literal or folded scalar is a string; an explicit tag
//     (!!str, !!int, !!float, !!bool, !!null, !!timestamp) resolves as
//     yaml v2 resolves it, a value that does not fit is an error, !!binary
//     is base64-decoded, any other tag leaves the text a string;
//   - anchors and aliases are expanded (a self-containing alias is an
//     error, as is alias expansion past yaml v2's ratio); merge keys "<<"
//     copy a mapping, or a list of mappings (the earlier winning), into
//     the mapping at the place of the key: later keys overwrite earlier
//     ones, merged or not (yaml v2's order, not the YAML spec's);
//   - a duplicate key (after resolution: 1 and 0x1 are the same key, 1 and
//     "1" are not) is an error in the strict forms ("line N: key K already
//     set in map", N the value's line) and the last one wins otherwise;
//   - map keys that are integers, booleans or floats become JSON strings
//     (floats formatted as float32, .inf, -.inf, .nan); a null or
//     unsigned-only (above MaxInt64) key is an error, and so is a mapping
//     or list used as a key; a NaN or infinite value is an error (JSON has
//     none).
//
// Unmarshal converts numbers and booleans to strings where the Go value's
// field is a string (sigs.k8s.io/yaml's target-directed conversion, with
// its rules: the field is found as encoding/json finds it, case-insensitive
// after an exact match; a field promoted from an embedded struct is looked
// up as the embedded struct, so its scalars are not converted; a type with
// an UnmarshalJSON or UnmarshalText method stops the conversion below it).
// UnmarshalStrict also refuses unknown fields. Error texts carry the same
// prefixes as sigs.k8s.io/yaml's ("error converting YAML to JSON: ",
// "error unmarshaling JSON: while decoding JSON: json: ...").
//
// Writing. Marshal is encoding/json, then the JSON read back with the rules
// above and written as yaml v2 writes it: two-space indentation, lists at
// their key's indentation ("- " compact), keys sorted in yaml v2's order
// (numbers by value, then runs of digits inside strings by value, other
// characters before letters), a string quoted "..." when it would read back
// as something else (or is a base-60 float such as 1:20), a string with a
// newline as a literal block (|, |-; double-quoted if it has a tab), floats with the shortest 'g' form.
//
// Known differences, each pinned by conformance/yaml:
//
//  1. Long strings are not folded. yaml v2 folds a plain or quoted scalar
//     at a space after column 80; yaml v3's emitter, used here, never
//     folds. Both read back to the same string.
//  2. The non-specific tag "!" on a plain scalar ("! 12"): yaml v2 keeps
//     the text as a string; yaml v3 drops the tag, so here it resolves as
//     if untagged (12).
//  3. Where sigs.k8s.io/yaml answers in Go's random map order. Two keys of
//     one mapping that differ in YAML but give the same JSON key (1 and
//     "1"; two floats equal in float32): sigs.k8s.io/yaml keeps one of
//     them at random, here the later one. Keys yaml v2's order cannot rank
//     (it is not transitive: "2001-12-14" < "2ind" < "16" < "2001-12-14")
//     are written in an order that changes from run to run; here in one
//     fixed order.
//  4. Text after the first document's root node (garbage after a root
//     scalar, a broken second document): yaml v2 stops reading at the
//     root's end, yaml v3 reads the next token (for comments) and fails
//     where that is not YAML: such a file is refused here and read by
//     sigs.k8s.io/yaml. The other way round, one case: a stream of
//     comments only, one indented by a tab ("#\n\t#"): yaml v3, which
//     reads comments itself, finds no document (null); yaml v2's scanner
//     refuses the tab.
//  5. JSONToYAML of YAML with a .nan key: yaml v2 cannot look the key up
//     again (NaN is not equal to itself) and writes its value as null,
//     and the NaN throws its key sort off; here the value is kept. (JSON
//     has no such key.)
//  6. The line a syntax error names. yaml v2 names the line of the token
//     that does not fit; yaml v3 the line where the construct it was
//     reading began, when it knows one ("a: 1\nb\nc: 2\n": yaml v2 "line
//     3: could not find expected ':'", yaml v3 "line 2", the key without
//     its colon). Never a later line. Over 20,000 random mutated documents
//     of conformance/yaml both failed on 11,898: the same message 9,423
//     times, an earlier line 1,979 times, and other words 496 times (yaml
//     v3 reads one token further, known difference 4, and meets a
//     different problem first).
//  7. Unmarshal decides the conversion of numbers to strings from the
//     target's type, not its value: a non-nil interface field holding a
//     pointer, which sigs.k8s.io/yaml looks through, is not looked into.
package yamljson
