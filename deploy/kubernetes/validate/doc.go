// Package validate checks the Kubernetes manifests of deploy/kubernetes
// against the real API: each file is decoded strictly into the Go types of
// k8s.io/api, the ones the API server's own decoding uses, so a misspelled
// field, a field in the wrong place or a wrong kind or apiVersion fails,
// and the objects are then checked for what KiloLock relies on (probes,
// non-root read-only pods, selectors that match, one image for the
// Deployment and the migration Job).
//
// It is a module of its own so that k8s.io/api stays out of the go.mod of
// the kilolock library, which programs embed. make test runs it:
//
//	cd deploy/kubernetes/validate && go test ./...
package validate
