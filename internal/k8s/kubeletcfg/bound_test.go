package kubeletcfg

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/sysfmt"
)

// reservedSystemCPUs "0-999999999" made k8s kubelet lint and k8s admit grow
// to 11.7 GB (issue 10, defect 8): Parse refuses it, naming the field, before
// anything parses it with kubelet's per-id parser.
func TestParseBoundsReservedSystemCPUs(t *testing.T) {
	for _, list := range []string{"0-999999999", "0-99999", strings.TrimSuffix(strings.Repeat("0-65535,", 1536), ",")} {
		doc := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: \"" + list + "\"\n"
		_, err := Parse([]byte(doc), "kc.yaml")
		if !errors.Is(err, sysfmt.ErrCPUListBound) || !strings.Contains(err.Error(), "reservedSystemCPUs") || !strings.Contains(err.Error(), "kc.yaml") {
			t.Errorf("reservedSystemCPUs %.20q: %v; want a bound error naming the file and field", list, err)
		}
	}
	// A syntax error is still lint's to report, not a load failure.
	doc := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nreservedSystemCPUs: \"x\"\n"
	if _, err := Parse([]byte(doc), "kc.yaml"); err != nil {
		t.Errorf("reservedSystemCPUs \"x\": %v; want it loaded for lint to report", err)
	}
}
