package admit

import (
	"bytes"
	"fmt"
	"os"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// LoadKubeletConfig reads a KubeletConfiguration (kubelet.config.k8s.io/v1beta1)
// strictly: unknown fields are errors, named with the file.
func LoadKubeletConfig(path string) (*kubeletv1beta1.KubeletConfiguration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kubelet config: %w", err)
	}
	return ParseKubeletConfig(b, path)
}

// ParseKubeletConfig decodes a KubeletConfiguration; name labels errors.
func ParseKubeletConfig(b []byte, name string) (*kubeletv1beta1.KubeletConfiguration, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%s: empty KubeletConfiguration", name)
	}
	var kc kubeletv1beta1.KubeletConfiguration
	if err := yaml.UnmarshalStrict(b, &kc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if kc.APIVersion != "kubelet.config.k8s.io/v1beta1" {
		return nil, fmt.Errorf("%s: apiVersion: Unsupported value: %q: supported values: \"kubelet.config.k8s.io/v1beta1\"", name, kc.APIVersion)
	}
	if kc.Kind != "KubeletConfiguration" {
		return nil, fmt.Errorf("%s: kind: Unsupported value: %q: supported values: \"KubeletConfiguration\"", name, kc.Kind)
	}
	return &kc, nil
}
