package kubeletcfg

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestParseReserved(t *testing.T) {
	for _, tc := range []struct {
		in      map[string]string
		want    string // "k=v ..." in key order, or the error
		wantErr bool
	}{
		{in: nil, want: ""},
		{in: map[string]string{"cpu": "1500u", "memory": "1Gi"}, want: "cpu=2m memory=1Gi"},
		{in: map[string]string{"cpu": "1499u"}, want: "cpu=1m"},
		{in: map[string]string{"cpu": "100n"}, want: "cpu=0"},
		{in: map[string]string{"cpu": "0.25", "pid": "1000", "ephemeral-storage": "10G"}, want: "cpu=250m ephemeral-storage=10G pid=1k"},
		{in: map[string]string{"memory": "-1Mi"}, want: `resource quantity for "memory" cannot be negative: -1Mi`, wantErr: true},
		{in: map[string]string{"hugepages-2Mi": "2Mi"}, want: `cannot reserve "hugepages-2Mi" resource`, wantErr: true},
		{in: map[string]string{"cpu": "one"}, want: `failed to parse quantity "one" for "cpu" resource: quantities must match the regular expression`, wantErr: true},
		{in: map[string]string{"zz": "1", "memory": "x", "cpu": "-1"}, want: `resource quantity for "cpu" cannot be negative: -1`, wantErr: true},
	} {
		got, err := ParseReserved(tc.in)
		if tc.wantErr {
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("%v: err %v, want %q", tc.in, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.in, err)
			continue
		}
		if len(tc.in) == 0 && got != nil {
			t.Errorf("%v: %v, want nil", tc.in, got)
		}
		var parts []string
		for _, k := range []string{"cpu", "ephemeral-storage", "memory", "pid"} {
			if q, ok := got[v1.ResourceName(k)]; ok {
				parts = append(parts, k+"="+q.String())
			}
		}
		if s := strings.Join(parts, " "); s != tc.want {
			t.Errorf("%v: %s, want %s", tc.in, s, tc.want)
		}
	}
}

func BenchmarkParseReserved(b *testing.B) {
	m := map[string]string{"cpu": "1500m", "memory": "2Gi", "ephemeral-storage": "10Gi", "pid": "1000"}
	for b.Loop() {
		if _, err := ParseReserved(m); err != nil {
			b.Fatal(err)
		}
	}
}
