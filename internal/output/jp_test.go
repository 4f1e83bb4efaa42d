package output

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

const jpDoc = `{"schemaVersion":"v1","flags":[{"n":"a","on":false},{"n":"b","on":null},{"n":"c"}],"nums":[0,1,2,3,4],"checks":[{"id":"a","status":"drift","n":2},{"id":"b","status":"ok","n":1.5},{"id":"c","status":"ok","labels":{"k.io/x":"y"}}],"m":{"z":1,"a":2}}`

func jpData(t testing.TB) any {
	var v any
	d := json.NewDecoder(strings.NewReader(jpDoc))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestJSONPathEngine: kubectl's template dialect on gpunode's engine (the
// differential test against client-go is conformance/dra/printers).
func TestJSONPathEngine(t *testing.T) {
	data := jpData(t)
	for _, tc := range []struct{ tmpl, want string }{
		{`{.schemaVersion}`, "v1"},
		{`{.checks[*].id}`, "a b c"},
		{`{.checks[-1].id}`, "c"},
		{`{.checks[0:2].status}`, "drift ok"},
		{`{.checks[?(@.status=="ok")].id}`, "b c"},
		{`{.checks[?(@.labels)].id}`, "c"},
		{`{range .checks[*]}{.id}={.status}{"\n"}{end}`, "a=drift\nb=ok\nc=ok\n"},
		{`{.checks[2].labels.k\.io/x}`, "y"},
		{`{.m.*}`, "2 1"},
		{`{..id}`, "a b c"},
		{`{.m}`, `{"a":2,"z":1}`},
		{`{.missing}`, ""},
		{`x{"\t"}y`, "x\ty"},
		{`{.flags[?(@.on)].n}`, "a b"}, // there, though false or null
		{`{.checks[?(@.id<"b")].id}`, "a"},
		{`{.nums[1::9223372036854775807]}`, "1"}, // no overflow past the end
		{`{.nums[0:5:2]}`, "0 2 4"},
		{`{.nums[4:]}`, "4"},
		{`{.nums[5:]}`, ""},
		{`{.nums[2:2:0]}`, ""},
		{`{.flags[1].on[0]}`, ""},
	} {
		jp, err := parseJP(tc.tmpl)
		if err != nil {
			t.Errorf("%s: %v", tc.tmpl, err)
			continue
		}
		var b bytes.Buffer
		if err := jp.execute(&b, data); err != nil || b.String() != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.tmpl, b.String(), err, tc.want)
		}
	}
	for _, bad := range []string{`{.a`, `{end}`, `{range .a}`, `{.a[}`, `{.a[x]}`, `{.a[?(@.b==)]}`} {
		if _, err := parseJP(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	for _, runtimeErr := range []string{`{.checks[7].id}`, `{.schemaVersion[0]}`, `{.checks[?(@.n>1)].id}`,
		`{.checks[?(@.labels==@.labels)].id}`, `{.checks[?(@.id==1)].id}`, `{.flags[?(@.on<true)].n}`,
		`{.checks[*][?(@.id)]}`, `{.m[?(@.z)]}`, `{.checks[?(@.id==$.m.*)].id}`, `{.nums[?(@==1.0)]}`,
		`{.nums[0:6]}`, `{.nums[-6:]}`, `{.nums[3:1]}`, `{.nums[1:3:0]}`} {
		jp, err := parseJP(runtimeErr)
		if err != nil {
			t.Fatalf("%s: %v", runtimeErr, err)
		}
		if err := jp.execute(&bytes.Buffer{}, data); err == nil {
			t.Errorf("%s: no error (client-go gives one)", runtimeErr)
		}
	}
}

// FuzzJSONPath: no template, however malformed, panics the parser or the
// evaluation; a template that parses runs the same way twice, and is
// a sequence of independent nodes: the template written twice parses and
// gives the output twice (or fails where the template alone fails).
// Agreement with client-go's jsonpath is the conformance module's
// (conformance/dra/printers).
func FuzzJSONPath(f *testing.F) {
	for _, s := range []string{`{.a.b[*].c}`, `{range .x[*]}{.y}{end}`, `{..z}`, `{.a[?(@.b>=1)]}`, `{"\n"}`, `{.a[1:5:2]}`, `{.a['b','c']}`,
		`{range .checks[*]}{.id}={.status}{"\n"}{end}`, `{.checks[7].id}`, `x{.m}y`,
		`{.checks[?(@.labels==@.m)].id}`, `{.nums[1::9223372036854775807]}`} {
		f.Add(s)
	}
	data := jpData(f)
	f.Fuzz(func(t *testing.T, tmpl string) {
		if len(tmpl) > 4096 {
			return
		}
		jp, err := parseJP(tmpl)
		if err != nil {
			return
		}
		var once, again bytes.Buffer
		err1 := jp.execute(&once, data)
		err2 := jp.execute(&again, data)
		if (err1 == nil) != (err2 == nil) || err1 == nil && once.String() != again.String() {
			t.Fatalf("%q: two runs differ: %q %v, %q %v", tmpl, once.String(), err1, again.String(), err2)
		}
		twice, err := parseJP(tmpl + tmpl)
		if err != nil {
			t.Fatalf("%q parses, written twice it does not: %v", tmpl, err)
		}
		var b bytes.Buffer
		errTwice := twice.execute(&b, data)
		switch {
		case (err1 == nil) != (errTwice == nil):
			t.Fatalf("%q: error %v alone, %v written twice", tmpl, err1, errTwice)
		case err1 == nil && b.String() != once.String()+once.String():
			t.Fatalf("%q gives %q, written twice %q", tmpl, once.String(), b.String())
		}
	})
}
