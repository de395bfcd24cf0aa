package validate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// decoder decodes the kinds deploy/kubernetes uses, strictly: an unknown
// or duplicate field is an error, and so is a kind its apiVersion does
// not have.
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// decode decodes every document of a YAML stream.
func decode(b []byte) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
}

// manifests are the files checked: those `kubectl apply -f
// deploy/kubernetes/` applies, the migration Job and the example Secret.
var manifests = []string{"*.yaml", "migrate/*.yaml", "examples/*.yaml"}

// load decodes every manifest, by file.
func load(t *testing.T) map[string][]runtime.Object {
	t.Helper()
	out := map[string][]runtime.Object{}
	for _, glob := range manifests {
		files, err := filepath.Glob(filepath.Join("..", glob))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := decode(b)
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			out[f] = objs
		}
	}
	if len(out) == 0 {
		t.Fatal("no manifest found")
	}
	return out
}

// TestStrictDecoding: the strict decoder refuses what a typo makes of a
// manifest, so that TestManifests' decoding means something.
func TestStrictDecoding(t *testing.T) {
	b, err := os.ReadFile("../deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decode(b); err != nil {
		t.Fatalf("deployment.yaml: %v", err)
	}
	for _, c := range []struct{ name, from, to string }{
		{"misspelled field", "\n  replicas:", "\n  replica:"},
		{"misspelled nested field", "readOnlyRootFilesystem:", "readOnlyRootFileSystem:"},
		{"field in the wrong place", "          ports:\n", "          port:\n"},
		{"wrong kind", "kind: Deployment", "kind: Deploymnet"},
		{"kind of another apiVersion", "apiVersion: apps/v1", "apiVersion: batch/v1"},
		{"wrong type", "replicas: 3", "replicas: three"},
	} {
		if !bytes.Contains(b, []byte(c.from)) {
			t.Fatalf("%s: deployment.yaml has no %q to change", c.name, c.from)
		}
		if _, err := decode(bytes.Replace(b, []byte(c.from), []byte(c.to), 1)); err == nil {
			t.Errorf("%s (%q for %q) decoded without an error", c.name, c.to, c.from)
		}
	}
}

// TestManifests decodes every manifest strictly and checks what KiloLock
// relies on.
func TestManifests(t *testing.T) {
	var (
		deployments []*appsv1.Deployment
		services    []*corev1.Service
		pdbs        []*policyv1.PodDisruptionBudget
		jobs        []*batchv1.Job
		secrets     []*corev1.Secret
		accounts    []*corev1.ServiceAccount
	)
	for f, objs := range load(t) {
		for _, obj := range objs {
			switch o := obj.(type) {
			case *appsv1.Deployment:
				deployments = append(deployments, o)
			case *corev1.Service:
				services = append(services, o)
			case *policyv1.PodDisruptionBudget:
				pdbs = append(pdbs, o)
			case *batchv1.Job:
				jobs = append(jobs, o)
			case *corev1.Secret:
				secrets = append(secrets, o)
			case *corev1.ServiceAccount:
				accounts = append(accounts, o)
			default:
				t.Errorf("%s: unexpected %T", f, obj)
			}
		}
	}
	if len(deployments) != 1 || len(services) != 1 || len(pdbs) != 1 || len(jobs) != 1 || len(secrets) != 1 || len(accounts) != 1 {
		t.Fatalf("%d deployments, %d services, %d disruption budgets, %d jobs, %d secrets, %d service accounts; want one of each",
			len(deployments), len(services), len(pdbs), len(jobs), len(secrets), len(accounts))
	}
	d, svc, pdb, job, secret := deployments[0], services[0], pdbs[0], jobs[0], secrets[0]

	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("the Deployment runs %v replicas, want several", d.Spec.Replicas)
	}
	pod := d.Spec.Template
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || !selector.Matches(labels.Set(pod.Labels)) {
		t.Errorf("the Deployment's selector %v does not match its pods' labels %v (%v)", d.Spec.Selector, pod.Labels, err)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) || len(svc.Spec.Selector) == 0 {
		t.Errorf("the Service's selector %v does not match the pods' labels %v", svc.Spec.Selector, pod.Labels)
	}
	if s, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil || !s.Matches(labels.Set(pod.Labels)) {
		t.Errorf("the PodDisruptionBudget's selector %v does not match the pods (%v)", pdb.Spec.Selector, err)
	}
	if pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil {
		t.Error("the PodDisruptionBudget limits nothing")
	}
	if pod.Spec.ServiceAccountName != accounts[0].Name {
		t.Errorf("the pods run as service account %q, the manifests make %q", pod.Spec.ServiceAccountName, accounts[0].Name)
	}

	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers in the Deployment's pods, want kld alone", len(pod.Spec.Containers))
	}
	kld := pod.Spec.Containers[0]
	checkPod(t, "the Deployment", pod.Spec, kld)
	port := kld.Ports[0]
	if port.ContainerPort != 8080 || port.Name == "" {
		t.Errorf("kld's port %+v, want 8080 with a name", port)
	}
	for name, probe := range map[string]*corev1.Probe{"readiness": kld.ReadinessProbe, "liveness": kld.LivenessProbe, "startup": kld.StartupProbe} {
		want := map[string]string{"readiness": "/readyz", "liveness": "/healthz", "startup": "/healthz"}[name]
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want || probe.HTTPGet.Port.String() != port.Name {
			t.Errorf("%s probe %+v, want GET %s on port %s", name, probe, want, port.Name)
		}
	}
	if tp := svc.Spec.Ports[0].TargetPort.String(); tp != port.Name && tp != fmt.Sprint(port.ContainerPort) {
		t.Errorf("the Service targets port %s, kld listens on %s (%d)", tp, port.Name, port.ContainerPort)
	}
	if !hasEnv(kld, "KL_LISTEN", "0.0.0.0:8080") {
		t.Error("kld in the Deployment does not listen on 0.0.0.0:8080")
	}
	// kld spools to KL_SPOOL_DIR (else the temporary directory): it must
	// be writable on a read-only root.
	spool := "/tmp"
	if v, ok := envValue(kld, "KL_SPOOL_DIR"); ok {
		spool = v
	}
	if !slices.ContainsFunc(kld.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.MountPath == spool && slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name && v.EmptyDir != nil })
	}) {
		t.Errorf("kld spools to %s, which is no emptyDir mount on its read-only root", spool)
	}

	// The migration Job runs kld migrate of the same image, on the same
	// database.
	if len(job.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers in the Job", len(job.Spec.Template.Spec.Containers))
	}
	migrate := job.Spec.Template.Spec.Containers[0]
	checkPod(t, "the migration Job", job.Spec.Template.Spec, migrate)
	if !slices.Equal(migrate.Args, []string{"migrate"}) || len(migrate.Command) != 0 {
		t.Errorf("the Job runs %q %q, want the image's kld with migrate", migrate.Command, migrate.Args)
	}
	if migrate.Image != kld.Image {
		t.Errorf("the Job runs %s, the Deployment %s: one release's image for both", migrate.Image, kld.Image)
	}
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever && job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("the Job's restart policy %q", job.Spec.Template.Spec.RestartPolicy)
	}
	for _, c := range []corev1.Container{kld, migrate} {
		ref := secretRef(c, "KL_DATABASE_URL")
		if ref == nil {
			t.Errorf("%s takes KL_DATABASE_URL from no Secret", c.Name)
			continue
		}
		if ref.Name != secret.Name {
			t.Errorf("%s reads Secret %s, the example is %s", c.Name, ref.Name, secret.Name)
		}
		if _, ok := secret.StringData[ref.Key]; !ok {
			t.Errorf("%s reads key %s of Secret %s, which the example lacks", c.Name, ref.Key, ref.Name)
		}
		if u := secret.StringData[ref.Key]; !strings.HasPrefix(u, "postgres://") {
			t.Errorf("the example database URL %q is no postgres:// URL", u)
		}
	}
}

// checkPod checks a pod runs c as a non-root user on a read-only root,
// without privileges, within resources.
func checkPod(t *testing.T, what string, spec corev1.PodSpec, c corev1.Container) {
	t.Helper()
	psc, sc := spec.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 {
		t.Errorf("%s: pod security context %+v, want non-root, user 65532 (the image's)", what, psc)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("%s: container security context %+v, want a read-only root, no privilege escalation, every capability dropped", what, sc)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s mounts a service account token kld has no use for", what)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: resources %+v, want CPU and memory requests and a memory limit", what, c.Resources)
	}
}

func envValue(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom == nil {
			return e.Value, true
		}
	}
	return "", false
}

func hasEnv(c corev1.Container, name, value string) bool {
	v, ok := envValue(c, name)
	return ok && v == value
}

func secretRef(c corev1.Container, name string) *corev1.SecretKeySelector {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil {
			return e.ValueFrom.SecretKeyRef
		}
	}
	return nil
}
