package kubelet

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletconfigscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	"k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
)

// resourceManagerError reports whether a kubelet validation message is about
// a field gpunode's lint covers.
func resourceManagerError(msg string) bool {
	for _, k := range []string{"topologyManager", "reservedSystemCPUs", "reserved memory", "limit type"} {
		if strings.Contains(msg, k) {
			return true
		}
	}
	return false
}

// TestLintMatchesKubeletValidation compares the config-validation findings
// with kubelet's ValidateKubeletConfiguration on the defaulted, converted
// configuration.
func TestLintMatchesKubeletValidation(t *testing.T) {
	scheme, _, err := kubeletconfigscheme.NewSchemeAndCodecs()
	if err != nil {
		t.Fatal(err)
	}
	for i, body := range []string{
		"",
		"topologyManagerPolicy: strict\n",
		"topologyManagerScope: node\n",
		"topologyManagerPolicy: Restricted\ntopologyManagerScope: Pod\n",
		"reservedSystemCPUs: \"0-\"\n",
		"reservedSystemCPUs: \"a\"\n",
		"reservedSystemCPUs: \"0-3\"\nkubeReservedCgroup: /kube\n",
		"reservedMemory: [{numaNode: 0, limits: {memory: \"0\"}}]\n",
		"reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}, {numaNode: 0, limits: {memory: 2Gi}}]\n",
		"reservedMemory: [{numaNode: 0, limits: {cpu: \"1\", memory: 1Gi}}, {numaNode: 1, limits: {hugepages-2Mi: \"0\"}}]\n",
		"reservedMemory: [{numaNode: 0, limits: {hugepages-1Gi: 1Gi, memory: 1Gi}}]\n",
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			doc := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" + body
			c, err := kubeletcfg.Parse([]byte(doc), "kc.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var mine []string
			for _, f := range kubeletcfg.Lint(c, nil).Findings {
				if f.Stage == kubeletcfg.StageValidation {
					mine = append(mine, f.Message)
				}
			}
			var ext kubeletv1beta1.KubeletConfiguration
			if err := yaml.UnmarshalStrict([]byte(doc), &ext); err != nil {
				t.Fatal(err)
			}
			scheme.Default(&ext)
			var internal kubeletconfig.KubeletConfiguration
			if err := scheme.Convert(&ext, &internal, nil); err != nil {
				t.Fatal(err)
			}
			var theirs []string
			if err := validation.ValidateKubeletConfiguration(&internal, utilfeature.DefaultFeatureGate); err != nil {
				var agg utilerrors.Aggregate
				if !errors.As(err, &agg) {
					t.Fatalf("not an aggregate: %v", err)
				}
				for _, e := range agg.Errors() {
					if resourceManagerError(e.Error()) {
						theirs = append(theirs, e.Error())
					}
				}
			}
			slices.Sort(mine)
			slices.Sort(theirs)
			if !slices.Equal(mine, theirs) {
				t.Errorf("gpunode:\n  %s\nkubelet:\n  %s", strings.Join(mine, "\n  "), strings.Join(theirs, "\n  "))
			}
		})
	}
}
