// Package deploy holds the tests of what deploy/ ships, run by make test
// like every other: the OCI image that make image builds (inspected, then
// its exported filesystem's kld serving a real tofu apply), the systemd
// unit (systemd-analyze verify and security), and the KL_ variables the
// deployment files set, which must be kld's. The Kubernetes manifests are
// checked against the real API types in deploy/kubernetes/validate, a
// module of its own.
//
// With CI=true a missing podman (or docker engine), systemd-analyze or
// tofu fails these tests; elsewhere it skips them.
//
//	go test ./internal/deploy -run TestImage
package deploy
