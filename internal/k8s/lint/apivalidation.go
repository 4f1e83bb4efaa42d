package lint

import (
	"sort"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RuleAPIValidation is the rule for names and labels the API server
// refuses.
const RuleAPIValidation = "api.validation"

func apiRules() []Rule {
	return []Rule{
		{ID: RuleAPIValidation, Severity: SeverityError, Section: "api", Local: true,
			Summary: "names, namespaces, labels, annotation keys, node selectors and container names are what the API server accepts (apimachinery's validators)",
			Check:   checkAPIValidation},
	}
}

// checkAPIValidation judges an object's metadata and its pod templates'
// labels, node selectors and container names with the validators the API
// server runs (ValidateObjectMeta's name, namespace, labels and
// annotations; ValidatePodSpec's nodeSelector and container names). The
// object's name is a DNS-1123 subdomain (a Namespace's a DNS-1123 label),
// as for the built-in kinds and every custom resource.
func checkAPIValidation(c *Context, emit Emit) {
	const fix = "use a value the API server accepts (kubectl apply --dry-run=server reports the same): names and namespaces lowercase letters, digits, '-' and '.'; label keys [prefix/]name, values at most 63 characters of letters, digits, '-', '_', '.'"
	for _, objs := range c.byKind {
		for _, o := range objs {
			m, ok := o.V.(metav1.Object)
			if !ok {
				continue // a config that is not a Kubernetes object
			}
			var errs field.ErrorList
			nameFn := apimachineryvalidation.NameIsDNSSubdomain
			if o.Kind == "Namespace" && o.APIVersion == "v1" {
				nameFn = apimachineryvalidation.ValidateNamespaceName
			}
			if n := m.GetName(); n != "" {
				for _, msg := range nameFn(n, false) {
					errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), n, msg))
				}
			}
			if ns := m.GetNamespace(); ns != "" {
				for _, msg := range apimachineryvalidation.ValidateNamespaceName(ns, false) {
					errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), ns, msg))
				}
			}
			errs = append(errs, metav1validation.ValidateLabels(m.GetLabels(), field.NewPath("metadata", "labels"))...)
			errs = append(errs, apimachineryvalidation.ValidateAnnotations(m.GetAnnotations(), field.NewPath("metadata", "annotations"))...)
			for _, p := range c.Pods {
				if p.Obj != o {
					continue
				}
				if p.Path != "spec" { // a template's own metadata
					meta := strings.TrimSuffix(p.Path, ".spec") + ".metadata"
					errs = append(errs, metav1validation.ValidateLabels(p.Meta.Labels, field.NewPath(meta+".labels"))...)
					errs = append(errs, apimachineryvalidation.ValidateAnnotations(p.Meta.Annotations, field.NewPath(meta+".annotations"))...)
				}
				errs = append(errs, metav1validation.ValidateLabels(p.Spec.NodeSelector, field.NewPath(p.Path+".nodeSelector"))...)
				for _, ct := range p.Containers() {
					for _, msg := range validation.IsDNS1123Label(ct.C.Name) {
						errs = append(errs, field.Invalid(field.NewPath(ct.Path+".name"), ct.C.Name, msg))
					}
				}
			}
			// in field order, then message (ValidateLabels walks a map)
			sort.SliceStable(errs, func(i, j int) bool {
				if errs[i].Field != errs[j].Field {
					return errs[i].Field < errs[j].Field
				}
				return errs[i].ErrorBody() < errs[j].ErrorBody()
			})
			for _, e := range errs {
				emit(o, e.Field, "the API server refuses the object: "+e.ErrorBody(), fix)
			}
		}
	}
}
