// Package helm renders deploy/helm/gpunode with the Helm SDK (helm.sh/helm/v3,
// a dependency of this test module only, never of the product binary) and
// checks that every rendered manifest decodes strictly into its k8s.io/api
// type and equals the plain manifest in deploy/.
package helm
