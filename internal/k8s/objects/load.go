package objects

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	schedv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/internal/userfile"
)

// ReadFile reads a whole input file ("-" is not special here), at most limit
// bytes (--max-input-bytes; limit <= 0: userfile.DefaultMaxBytes): a larger
// regular file is refused from its size, before it is read.
// Its first 16 MiB are sniffed first (sniffHead): junk, binary data and an
// over-long first line are refused without reading the rest.
func ReadFile(path string, limit int64) ([]byte, error) {
	return userfile.ReadChecked(path, limit, 2*MaxLineBytes, func(head []byte) error { return sniffHead(path, head) })
}

// ReadAll reads r (name labels errors: a file, "stdin") to its end, at
// most limit bytes.
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	return userfile.ReadAll(r, name, limit)
}

// Source is where an object came from.
type Source struct {
	File string
	Doc  int
	Item int // -1 when the document is the object itself
}

// Errorf returns a bad-input error located at s.
func (s Source) Errorf(object, field, format string, args ...any) *Error {
	return &Error{File: s.File, Doc: s.Doc, Item: s.Item, Object: object, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// listMeta accepts both an object's and a List's metadata.
type listMeta struct {
	metav1.ObjectMeta  `json:",inline"`
	Continue           string `json:"continue,omitempty"`
	RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
}

// nodeDoc is a Node or a List of Nodes: one strict typed pass decodes both.
type nodeDoc struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        listMeta      `json:"metadata"`
	Spec            v1.NodeSpec   `json:"spec"`
	Status          v1.NodeStatus `json:"status"`
	Items           []*v1.Node    `json:"items"`
}

// podDoc is a Pod or a List of Pods.
type podDoc struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        listMeta     `json:"metadata"`
	Spec            v1.PodSpec   `json:"spec"`
	Status          v1.PodStatus `json:"status"`
	Items           []*v1.Pod    `json:"items"`
}

func isList(kind, want string) bool { return kind == "List" || kind == want+"List" }

// The fields the planners (place, dra, admit, lint) read of a Node and a
// Pod: the view decode keeps these and checks the rest without keeping it.
var (
	nodeFields = []string{"kind", "apiVersion", "metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels", "metadata.annotations",
		"spec.unschedulable", "spec.taints", "status.capacity", "status.allocatable", "status.conditions"}
	podFields = []string{"kind", "apiVersion", "metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels", "metadata.annotations",
		"metadata.ownerReferences", "spec.nodeName", "spec.nodeSelector", "spec.affinity", "spec.tolerations", "spec.resources", "spec.overhead",
		"spec.resourceClaims", "spec.schedulingGates", "spec.priority", "spec.priorityClassName", "spec.schedulerName",
		"spec.containers.name", "spec.containers.resources", "spec.containers.restartPolicy",
		"spec.initContainers.name", "spec.initContainers.resources", "spec.initContainers.restartPolicy",
		"status.phase", "status.qosClass"}
)

// docView is the view of a document that is an object or a List of them:
// fields of the object at the top and under items.
func docView(t reflect.Type, fields []string) *plan {
	paths := []string{"items"}
	for _, f := range fields {
		paths = append(paths, f, "items."+f)
	}
	return view(t, paths...)
}

var (
	nodeDocView = sync.OnceValue(func() *plan { return docView(reflect.TypeFor[nodeDoc](), nodeFields) })
	podDocView  = sync.OnceValue(func() *plan { return docView(reflect.TypeFor[podDoc](), podFields) })
)

// viewDocError turns a view decode error of document d into an *Error: the
// List item and the object's name (read again from the document, on this
// error path only) are named.
func viewDocError(d Document, kind string, err error) *Error {
	ve, ok := err.(*viewError)
	if !ok {
		return d.errorf(-1, "", "", "%s", err)
	}
	path, item := ve.path, -1
	var l struct {
		Items []json.RawMessage `json:"items"`
	}
	if rest, ok := strings.CutPrefix(path, "items["); ok {
		if end := strings.IndexByte(rest, ']'); end > 0 {
			if n, err := strconv.Atoi(rest[:end]); err == nil {
				item, path = n, strings.TrimPrefix(rest[end+1:], ".")
			}
		}
	}
	var m TypeMeta
	if item >= 0 {
		if json.Unmarshal(d.JSON, &l) == nil && item < len(l.Items) {
			_ = json.Unmarshal(l.Items[item], &m)
		}
	} else {
		_ = json.Unmarshal(d.JSON, &m)
	}
	obj := ""
	if m.Metadata.Name != "" || item >= 0 {
		k := m.Kind
		if k == "" || item >= 0 {
			k = kind
		}
		obj = fmt.Sprintf("%s %q", k, m.Metadata.Name)
	}
	if ve.named {
		return d.errorf(item, obj, "", "%s %q", ve.reason, path)
	}
	return d.errorf(item, obj, path, "%s", ve.reason)
}

// DecodeNodes decodes v1 Nodes (documents or Lists) from data into the
// planner Node (the fields the planners read, nodeFields); every other
// field is checked as strictly as a whole decode would, without being kept.
func DecodeNodes(file string, data []byte) (_ []*Node, retErr error) {
	defer func() { retErr = Locate(retErr, data) }()
	var out []*Node
	td := &typedDecoder{}
	pl := typedPlansOnce()
	err := EachDocument(file, data, func(d Document) error {
		td.reset(d.JSON)
		var top Node
		var items []*Node
		var hasItems bool
		err := td.nodeObject(pl.nodeDoc, &top, &items, &hasItems)
		if err == nil {
			err = td.finish()
		}
		if err != nil {
			if wk := wrongKind(d, "Node", "v1 Node (or a List of Nodes)"); wk != nil {
				return wk
			}
			return viewDocError(d, "Node", err)
		}
		switch {
		case isList(top.Kind, "Node"):
			if top.APIVersion != "v1" {
				return d.errorf(-1, "", "apiVersion", "Unsupported value: %q: supported values: \"v1\"", top.APIVersion)
			}
			for i, n := range items {
				if n == nil {
					return d.errorf(i, "", "", "Invalid value: null (want a Node)")
				}
				if err := checkItem(d, i, n.Kind, n.APIVersion, "Node", n.Name); err != nil {
					return err
				}
				if err := validNode(d, i, n); err != nil {
					return err
				}
			}
			out = append(out, items...)
		case top.Kind == "Node":
			if err := checkObject(d, top.APIVersion, hasItems, "Node", top.Name); err != nil {
				return err
			}
			if err := validNode(d, -1, &top); err != nil {
				return err
			}
			n := top
			out = append(out, &n)
		default:
			if wk := wrongKind(d, "Node", "v1 Node (or a List of Nodes)"); wk != nil {
				return wk
			}
			return d.errorf(-1, "", "kind", "Unsupported value: %q: supported values: \"Node\", \"List\", \"NodeList\"", top.Kind)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := uniqueNames(file, len(out), func(i int) (string, string, string) { return "", out[i].Name, "Node" }); err != nil {
		return nil, err
	}
	return out, nil
}

// DecodePods decodes v1 Pods (documents or Lists) from data into the
// planner Pod (the fields the planners read, podFields); every other field
// is checked as strictly as a whole decode would, without being kept.
func DecodePods(file string, data []byte) (_ []*Pod, retErr error) {
	defer func() { retErr = Locate(retErr, data) }()
	var out []*Pod
	td := &typedDecoder{}
	pl := typedPlansOnce()
	err := EachDocument(file, data, func(d Document) error {
		td.reset(d.JSON)
		var top Pod
		var items []*Pod
		var hasItems bool
		err := td.podObject(pl.podDoc, &top, &items, &hasItems)
		if err == nil {
			err = td.finish()
		}
		if err != nil {
			if wk := wrongKind(d, "Pod", "v1 Pod (or a List of Pods)"); wk != nil {
				return wk
			}
			return viewDocError(d, "Pod", err)
		}
		switch {
		case isList(top.Kind(), "Pod"):
			if top.APIVersion() != "v1" {
				return d.errorf(-1, "", "apiVersion", "Unsupported value: %q: supported values: \"v1\"", top.APIVersion())
			}
			for i, p := range items {
				if p == nil {
					return d.errorf(i, "", "", "Invalid value: null (want a Pod)")
				}
				if err := checkItem(d, i, p.Kind(), p.APIVersion(), "Pod", p.Name); err != nil {
					return err
				}
				if err := validPod(d, i, p); err != nil {
					return err
				}
			}
			out = append(out, items...)
		case top.Kind() == "Pod":
			if err := checkObject(d, top.APIVersion(), hasItems, "Pod", top.Name); err != nil {
				return err
			}
			if err := validPod(d, -1, &top); err != nil {
				return err
			}
			p := top
			out = append(out, &p)
		default:
			if wk := wrongKind(d, "Pod", "v1 Pod (or a List of Pods)"); wk != nil {
				return wk
			}
			return d.errorf(-1, "", "kind", "Unsupported value: %q: supported values: \"Pod\", \"List\", \"PodList\"", top.Kind())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := uniqueNames(file, len(out), func(i int) (string, string, string) { return out[i].Namespace, out[i].Name, "Pod" }); err != nil {
		return nil, err
	}
	return out, nil
}

// LoadNodes is DecodeNodes as v1 Nodes (holding the same fields), for the
// users that want those.
func LoadNodes(file string, data []byte) ([]*v1.Node, error) {
	nodes, err := DecodeNodes(file, data)
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Node, len(nodes))
	for i, n := range nodes {
		out[i] = n.V1()
	}
	return out, nil
}

// LoadPods is DecodePods as v1 Pods (holding the same fields), for the
// users that want those.
func LoadPods(file string, data []byte) ([]*v1.Pod, error) {
	pods, err := DecodePods(file, data)
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Pod, len(pods))
	for i, p := range pods {
		out[i] = p.V1()
	}
	return out, nil
}

func checkItem(d Document, i int, kind, apiVersion, want, name string) error {
	if (kind == "" || kind == want) && (apiVersion == "" || apiVersion == "v1") && name != "" {
		return nil
	}
	obj := fmt.Sprintf("%s %q", want, name)
	if kind != "" && kind != want {
		return d.errorf(i, obj, "kind", "Unsupported value: %q: supported values: %q", kind, want)
	}
	if apiVersion != "" && apiVersion != "v1" {
		return d.errorf(i, obj, "apiVersion", "Unsupported value: %q: supported values: \"v1\"", apiVersion)
	}
	if name == "" {
		return d.errorf(i, obj, "metadata.name", "Required value: name is required")
	}
	return nil
}

func checkObject(d Document, apiVersion string, hasItems bool, want, name string) error {
	obj := fmt.Sprintf("%s %q", want, name)
	if apiVersion != "v1" {
		return d.errorf(-1, obj, "apiVersion", "Unsupported value: %q: supported values: \"v1\"", apiVersion)
	}
	if hasItems {
		return d.errorf(-1, obj, "items", "Forbidden: only a List has items")
	}
	if name == "" {
		return d.errorf(-1, obj, "metadata.name", "Required value: name is required")
	}
	return nil
}

// uniqueNames refuses two objects of the same namespace and name. It
// keeps a 64-bit hash per object, not the names (a 100k-pod file is at
// its largest when this runs); a hash seen twice is compared by name.
func uniqueNames(file string, n int, at func(int) (namespace, name, kind string)) error {
	seed := maphash.MakeSeed()
	var h maphash.Hash
	return uniqueNamesHashed(file, n, at, func(ns, name string) uint64 {
		h.SetSeed(seed)
		h.WriteString(ns)
		h.WriteByte('/') // a name has no '/'
		h.WriteString(name)
		return h.Sum64()
	})
}

func uniqueNamesHashed(file string, n int, at func(int) (namespace, name, kind string), hash func(ns, name string) uint64) error {
	seen := make(map[uint64]int32, n)
	var collided map[[2]string]int // every name whose hash another name has
	for i := 0; i < n; i++ {
		ns, name, kind := at(i)
		k := hash(ns, name)
		j, ok := seen[k]
		if !ok {
			seen[k] = int32(i)
			continue
		}
		jns, jname, _ := at(int(j))
		if jns == ns && jname == name {
			return duplicateName(file, kind, ns, name, int(j), i)
		}
		if collided == nil {
			collided = map[[2]string]int{}
		}
		if _, ok := collided[[2]string{jns, jname}]; !ok {
			collided[[2]string{jns, jname}] = int(j)
		}
		if c, ok := collided[[2]string{ns, name}]; ok {
			return duplicateName(file, kind, ns, name, c, i)
		}
		collided[[2]string{ns, name}] = i
	}
	return nil
}

func duplicateName(file, kind, ns, name string, j, i int) error {
	key := name
	if ns != "" {
		key = ns + "/" + name
	}
	return &Error{File: file, Item: -1, Object: fmt.Sprintf("%s %q", kind, key), Field: "metadata.name",
		Reason: fmt.Sprintf("Duplicate value: %q (objects %d and %d of the file)", key, j+1, i+1)}
}

// locateItemError turns a failed decode of a whole document into an error
// naming the List item when the document is a List (decoding the items one
// by one; this runs only when the input is bad).
func locateItemError(d Document, kind, field, reason string, one func([]byte) (string, string, bool)) error {
	var l struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(d.JSON, &l) == nil && len(l.Items) > 0 {
		for i, raw := range l.Items {
			if f, r, bad := one(raw); bad {
				var m TypeMeta
				_ = json.Unmarshal(raw, &m)
				return d.errorf(i, fmt.Sprintf("%s %q", kind, m.Metadata.Name), f, "%s", r)
			}
		}
	}
	field = strings.TrimPrefix(field, "items.")
	var m TypeMeta
	_ = json.Unmarshal(d.JSON, &m)
	obj := ""
	if m.Metadata.Name != "" {
		k := m.Kind
		if k == "" {
			k = kind
		}
		obj = fmt.Sprintf("%s %q", k, m.Metadata.Name)
	}
	return d.errorf(-1, obj, field, "%s", reason)
}

// Object is one object of a small file (a List's items expanded), not yet
// decoded into its type.
type Object struct {
	Source
	TypeMeta
	JSON []byte
}

// Label is "Kind \"name\"".
func (o Object) Label() string { return fmt.Sprintf("%s %q", o.Kind, o.Metadata.Name) }

// Objects splits data into objects, expanding Lists.
func Objects(file string, data []byte) ([]Object, error) {
	var out []Object
	err := EachObject(file, data, func(o Object) error {
		out = append(out, o)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Decode decodes o strictly into v (a pointer to o's type).
func (o Object) Decode(v any) error {
	if field, reason, bad := strict(o.JSON, v); bad {
		return o.Errorf(o.Label(), field, "%s", reason)
	}
	if o.Metadata.Name == "" {
		return o.Errorf(o.Label(), "metadata.name", "Required value: name is required")
	}
	return nil
}

// PodGroup is a PodGroup (scheduling.k8s.io v1alpha2 or v1alpha3, decoded
// into the v1alpha3 types they share) and where it came from.
type PodGroup struct {
	Source
	*schedv1alpha3.PodGroup
}

// Job is a batch/v1 Job and where it came from.
type Job struct {
	Source
	*batchv1.Job
}

// VolcanoJobObject is a Volcano Job and where it came from.
type VolcanoJobObject struct {
	Source
	*VolcanoJob
}

// Workload is what a --workload file holds.
type Workload struct {
	PodGroups   []PodGroup
	Jobs        []Job
	VolcanoJobs []VolcanoJobObject
}

// LoadWorkload decodes PodGroups, batch/v1 Jobs and Volcano Jobs.
func LoadWorkload(file string, data []byte) (_ *Workload, retErr error) {
	defer func() { retErr = Locate(retErr, data) }()
	objs, err := Objects(file, data)
	if err != nil {
		return nil, err
	}
	w := &Workload{}
	for _, o := range objs {
		switch {
		case o.Kind == "PodGroup" && (o.APIVersion == GroupVersionPodGroupAlpha2 || o.APIVersion == GroupVersionPodGroupAlpha3 || o.APIVersion == GroupVersionPodGroupBeta1):
			pg := &schedv1alpha3.PodGroup{}
			if err := o.Decode(pg); err != nil {
				return nil, err
			}
			w.PodGroups = append(w.PodGroups, PodGroup{o.Source, pg})
		case o.Kind == "Job" && o.APIVersion == "batch/v1":
			j := &batchv1.Job{}
			if err := o.Decode(j); err != nil {
				return nil, err
			}
			if err := validJob(o, j); err != nil {
				return nil, err
			}
			w.Jobs = append(w.Jobs, Job{o.Source, j})
		case o.Kind == "Job" && o.APIVersion == GroupVersionVolcanoBatch:
			j := &VolcanoJob{}
			if err := o.Decode(j); err != nil {
				return nil, err
			}
			if err := validVolcanoJob(o, j); err != nil {
				return nil, err
			}
			w.VolcanoJobs = append(w.VolcanoJobs, VolcanoJobObject{o.Source, j})
		default:
			return nil, o.Errorf(o.Label(), "kind", "Unsupported value: %q (apiVersion %q): supported: PodGroup (%s, %s, %s), Job (batch/v1, %s)",
				o.Kind, o.APIVersion, GroupVersionPodGroupBeta1, GroupVersionPodGroupAlpha2, GroupVersionPodGroupAlpha3, GroupVersionVolcanoBatch)
		}
	}
	return w, nil
}

// HyperNodeObject is a HyperNode and where it came from.
type HyperNodeObject struct {
	Source
	*HyperNode
}

// LevelTopologyObject is a KAI or Kueue Topology and where it came from.
type LevelTopologyObject struct {
	Source
	*LevelTopology
}

// Topology is what a --topology file holds.
type Topology struct {
	HyperNodes []HyperNodeObject
	KAI        []LevelTopologyObject
	Kueue      []LevelTopologyObject
}

// LoadTopology decodes Volcano HyperNodes, KAI Topologies and Kueue
// Topologies.
func LoadTopology(file string, data []byte) (_ *Topology, retErr error) {
	defer func() { retErr = Locate(retErr, data) }()
	objs, err := Objects(file, data)
	if err != nil {
		return nil, err
	}
	t := &Topology{}
	for _, o := range objs {
		switch {
		case o.Kind == "HyperNode" && o.APIVersion == GroupVersionHyperNode:
			h := &HyperNode{}
			if err := o.Decode(h); err != nil {
				return nil, err
			}
			t.HyperNodes = append(t.HyperNodes, HyperNodeObject{o.Source, h})
		case o.Kind == "Topology" && (o.APIVersion == GroupVersionKAI || o.APIVersion == GroupVersionKueueV1beta1 || o.APIVersion == GroupVersionKueueV1beta2):
			lt := &LevelTopology{}
			if err := o.Decode(lt); err != nil {
				return nil, err
			}
			for i, l := range lt.Spec.Levels {
				if l.NodeLabel == "" {
					return nil, o.Errorf(o.Label(), fmt.Sprintf("spec.levels[%d].nodeLabel", i), "Required value")
				}
			}
			if len(lt.Spec.Levels) == 0 {
				return nil, o.Errorf(o.Label(), "spec.levels", "Required value: at least one level")
			}
			if o.APIVersion == GroupVersionKAI {
				t.KAI = append(t.KAI, LevelTopologyObject{o.Source, lt})
			} else {
				t.Kueue = append(t.Kueue, LevelTopologyObject{o.Source, lt})
			}
		default:
			return nil, o.Errorf(o.Label(), "kind", "Unsupported value: %q (apiVersion %q): supported: HyperNode (%s), Topology (%s, %s, %s)",
				o.Kind, o.APIVersion, GroupVersionHyperNode, GroupVersionKAI, GroupVersionKueueV1beta1, GroupVersionKueueV1beta2)
		}
	}
	return t, nil
}
