package kubelet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletconfigscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/sysfmt"
)

// jsonFields lists the JSON fields of struct type t by name, with the
// fields of inline (untagged or ",inline") embedded structs promoted, as
// encoding/json sees them.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// sameShape checks that mine decodes the JSON that theirs decodes: the same
// JSON names at every level of nesting, the same omitempty options, the same
// kinds of values; types with their own JSON decoding must be the same type
// (apimachinery's Duration, Quantity, Time) or, for component-base's
// flushFrequency, a type of ours with its own decoding (the corpus test
// covers its behaviour). exact requires identical types (the read fields).
func sameShape(t *testing.T, path string, theirs, mine reflect.Type, exact bool) {
	t.Helper()
	if exact && theirs.Kind() != reflect.Struct && theirs.PkgPath() == "" && theirs != mine {
		t.Errorf("%s: type %v, upstream %v", path, mine, theirs)
		return
	}
	if theirs.Kind() != mine.Kind() {
		t.Errorf("%s: kind %v, upstream %v (%v)", path, mine.Kind(), theirs.Kind(), theirs)
		return
	}
	if reflect.PointerTo(theirs).Implements(unmarshaler) {
		if theirs == mine {
			return
		}
		if theirs.PkgPath() == "k8s.io/component-base/logs/api/v1" && reflect.PointerTo(mine).Implements(unmarshaler) {
			return
		}
		t.Errorf("%s: %v decodes its own JSON; ours is %v", path, theirs, mine)
		return
	}
	switch theirs.Kind() {
	case reflect.Pointer, reflect.Slice:
		sameShape(t, path+"[]", theirs.Elem(), mine.Elem(), exact)
	case reflect.Map:
		sameShape(t, path+"{key}", theirs.Key(), mine.Key(), exact)
		sameShape(t, path+"{}", theirs.Elem(), mine.Elem(), exact)
	case reflect.Struct:
		tf, mf := jsonFields(theirs), jsonFields(mine)
		for name, f := range tf {
			g, ok := mf[name]
			if !ok {
				t.Errorf("%s.%s: upstream field missing here (an unknown-field error gpunode would report wrongly)", path, name)
				continue
			}
			if f.Tag.Get("json") != g.Tag.Get("json") {
				t.Errorf("%s.%s: json tag %q, upstream %q", path, name, g.Tag.Get("json"), f.Tag.Get("json"))
			}
			sameShape(t, path+"."+name, f.Type, g.Type, exact)
		}
		for name := range mf {
			if _, ok := tf[name]; !ok {
				t.Errorf("%s.%s: not an upstream field", path, name)
			}
		}
	default:
		if theirs.Kind() != mine.Kind() {
			t.Errorf("%s: %v, upstream %v", path, mine, theirs)
		}
	}
}

// readFields are the KubeletConfiguration fields gpunode reads: their Go
// types must be upstream's, not just decode alike.
var readFields = []string{
	"cpuManagerPolicy", "cpuManagerPolicyOptions", "memoryManagerPolicy", "reservedMemory",
	"topologyManagerPolicy", "topologyManagerScope", "topologyManagerPolicyOptions",
	"reservedSystemCPUs", "kubeReserved", "systemReserved", "kubeReservedCgroup", "systemReservedCgroup",
	"enforceNodeAllocatable", "evictionHard", "mergeDefaultEvictionSettings", "featureGates",
}

// TestKubeletConfigurationFields keeps kubeletcfg.KubeletConfiguration
// field-for-field equal to kubelet's v1beta1 type.
func TestKubeletConfigurationFields(t *testing.T) {
	theirs, mine := reflect.TypeFor[kubeletv1beta1.KubeletConfiguration](), reflect.TypeFor[kubeletcfg.KubeletConfiguration]()
	sameShape(t, "KubeletConfiguration", theirs, mine, false)
	tf, mf := jsonFields(theirs), jsonFields(mine)
	if len(tf) < 120 {
		t.Fatalf("upstream type has %d JSON fields; the walk is broken", len(tf))
	}
	for _, name := range readFields {
		f, g := tf[name], mf[name]
		if f.Type == nil || g.Type == nil {
			t.Errorf("%s: read field missing (upstream %v, ours %v)", name, f.Type, g.Type)
			continue
		}
		if name == "reservedMemory" {
			// Our own element type; its fields must be typed as upstream's.
			te, me := f.Type.Elem(), g.Type.Elem()
			for n, ff := range jsonFields(te) {
				if gf := jsonFields(me)[n]; gf.Type != ff.Type {
					t.Errorf("reservedMemory.%s: %v, upstream %v", n, gf.Type, ff.Type)
				}
			}
			continue
		}
		sameShape(t, name, f.Type, g.Type, true)
	}
}

// corpus returns KubeletConfiguration documents: the testdata files, every
// field set to a value of each JSON kind, unknown and case-shifted keys at
// each level, and values at the edges of their types.
func corpus(t *testing.T) map[string]string {
	t.Helper()
	const head = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	docs := map[string]string{"empty": head}
	for _, dir := range []string{"testdata", "../../internal/k8s/kubeletcfg/testdata"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "KubeletConfiguration") {
				docs[f] = string(b)
			}
		}
	}
	values := []string{`"x"`, `""`, `"5s"`, `"1Gi"`, `"2026-01-02T03:04:05Z"`, `0`, `1`, `-1`, `2147483648`, `4294967296`, `1.5`, `1e3`,
		`true`, `null`, `[]`, `["a"]`, `[1]`, `{}`, `{"a": "b"}`, `{"a": 1}`, `{"a": true}`, `{"memory": "1Gi"}`, `[{"numaNode": 0, "limits": {"memory": "1Gi"}}]`,
		`[{"numaNode": "0"}]`, `[{"key": "k", "effect": "NoSchedule"}]`, `{"enabled": true}`, `{"x509": {"clientCAFile": "/ca"}}`, `{"webhook": {"cacheTTL": "2m"}}`,
		`{"webhook": {"cacheTTL": 5}}`, `{"mode": "Webhook", "webhook": {"cacheAuthorizedTTL": "5m"}}`, `{"flushFrequency": 5000000000}`, `{"flushFrequency": "5s"}`,
		`{"flushFrequency": "x"}`, `{"verbosity": -1}`, `{"vmodule": [{"filePattern": "a*", "verbosity": 3}]}`, `{"options": {"json": {"infoBufferSize": "1Mi", "splitStream": true}}}`,
		`{"options": {"text": {"infoBufferSize": "x"}}}`, `{"options": {"text": {"other": 1}}}`, `{"unknown": 1}`, `{"endpoint": "localhost:4317", "samplingRatePerMillion": 5}`,
		`{"idsPerPod": 65536}`, `{"maxContainerRestartPeriod": "10s"}`, `{"swapBehavior": "LimitedSwap"}`, `[{"priority": 1, "shutdownGracePeriodSeconds": 10}]`, `[{"priority": 1, "other": 1}]`}
	for name := range jsonFields(reflect.TypeFor[kubeletv1beta1.KubeletConfiguration]()) {
		if name == "apiVersion" || name == "kind" {
			continue
		}
		for i, v := range values {
			docs[fmt.Sprintf("%s=%d", name, i)] = head + name + ": " + v + "\n"
		}
		docs[name+"/upper"] = head + strings.ToUpper(name[:1]) + name[1:] + ": null\n"
		docs[name+"/dup"] = head + name + ": null\n" + name + ": null\n"
	}
	docs["unknown-top"] = head + "cpuManagerPolicyy: static\n"
	docs["case-insensitive"] = head + "CPUMANAGERPOLICY: static\ncpuManagerPolicy: none\n"
	docs["not-a-map"] = "- a\n"
	docs["tabs"] = head + "\tcpuManagerPolicy: static\n"
	return docs
}

// canonical is v as generic JSON (maps, not structs), so that values of the
// two types compare whatever their Go field order.
func canonical(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestKubeletConfigurationCorpus decodes every corpus document with the
// upstream type and with kubeletcfg's: the same verdict, the same values,
// and after defaulting the same values for the fields gpunode reads.
func TestKubeletConfigurationCorpus(t *testing.T) {
	scheme, _, err := kubeletconfigscheme.NewSchemeAndCodecs()
	if err != nil {
		t.Fatal(err)
	}
	docs := corpus(t)
	names := make([]string, 0, len(docs))
	for n := range docs {
		names = append(names, n)
	}
	sort.Strings(names)
	accepted, rejected := 0, 0
	for _, name := range names {
		doc := docs[name]
		var theirs kubeletv1beta1.KubeletConfiguration
		errTheirs := yaml.UnmarshalStrict([]byte(doc), &theirs)
		var mine kubeletcfg.KubeletConfiguration
		errMine := yaml.UnmarshalStrict([]byte(doc), &mine)
		if (errTheirs == nil) != (errMine == nil) {
			t.Errorf("%s: upstream error %v, gpunode error %v\n%s", name, errTheirs, errMine, doc)
			continue
		}
		if errTheirs != nil {
			rejected++
			continue
		}
		accepted++
		// Parse decodes the same way and adds gpunode's own bound on CPU
		// lists (kubelet's parser would allocate per id).
		c, err := kubeletcfg.Parse([]byte(doc), "kc")
		if errors.Is(err, sysfmt.ErrCPUListBound) {
			continue
		}
		if err != nil {
			t.Errorf("%s: decodes, but Parse says %v", name, err)
			continue
		}
		if a, b := canonical(t, theirs), canonical(t, mine); !reflect.DeepEqual(a, b) {
			t.Errorf("%s: decoded values differ\nupstream %v\ngpunode  %v", name, a, b)
		}
		if !defaultWith(scheme.Default, &theirs) {
			continue // kubelet's defaulting refuses the document (an unknown feature gate)
		}
		d := canonical(t, theirs).(map[string]any)
		g := canonical(t, c.KC).(map[string]any)
		for _, f := range []string{"cpuManagerPolicy", "memoryManagerPolicy", "topologyManagerPolicy", "topologyManagerScope"} {
			if !reflect.DeepEqual(d[f], g[f]) {
				t.Errorf("%s: defaulted %s = %v, upstream %v", name, f, g[f], d[f])
			}
		}
	}
	t.Logf("%d documents: %d accepted by both, %d rejected by both", len(docs), accepted, rejected)
	if accepted < 100 || rejected < 100 {
		t.Errorf("corpus too one-sided: %d accepted, %d rejected", accepted, rejected)
	}
}

// defaultWith applies kubelet's scheme defaults to kc; it reports false when
// the defaulting panics (it does on an unknown feature gate).
func defaultWith(def func(runtime.Object), kc *kubeletv1beta1.KubeletConfiguration) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	def(kc)
	return true
}
