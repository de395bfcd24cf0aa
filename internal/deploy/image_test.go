package deploy_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// imageConfig is the part of `podman image inspect` (or docker's) the
// test reads.
type imageConfig struct {
	User         string
	Entrypoint   []string
	Env          []string
	WorkingDir   string
	Volumes      map[string]struct{}
	ExposedPorts map[string]struct{}
	Labels       map[string]string
}

// TestImage builds the image as make image does (scripts/image.sh),
// offline (without a network, as root), checks its configuration, then
// exports its filesystem and runs the kld in it for a real tofu apply.
//
// Containers cannot be run on the machines this project is tested on:
// crun refuses to set up cgroups there. So rather than `podman run`, the
// test runs the image's entrypoint from its exported filesystem, chrooted
// into it as the image's user (uid 65532) with the image's environment and
// working directory, so that it reads the image's own CA certificates,
// zoneinfo and /etc/passwd, and keeps its database in the image's /data
// (its default ./kilolock.db, there).
// It shares the host's network, so it listens on a free port of 127.0.0.1
// rather than the image's 0.0.0.0:8080 (checked in the configuration).
// Without root (no chroot) it runs the exported binary on the host with
// its paths pointed into the export.
func TestImage(t *testing.T) {
	t.Parallel()
	engine := containerEngine(t)
	tofu.Binary(t) // skip (or fail in CI) before the build
	root := tofu.ModuleRoot(t)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	// Offline, as the image promises: as root, the build runs in a
	// network namespace of its own with nothing but a loopback, and with
	// Go's module proxy off, so that a base image to pull or a module to
	// download fails it.
	build := exec.CommandContext(ctx, "bash", "scripts/image.sh")
	if unshare, err := exec.LookPath("unshare"); err == nil && os.Geteuid() == 0 && exec.Command(unshare, "--net", "true").Run() == nil {
		build = exec.CommandContext(ctx, unshare, "--net", "bash", "scripts/image.sh")
	} else {
		t.Log("not root, or no network namespace (unshare --net): building with the machine's network")
	}
	build.Dir = root
	build.Env = append(os.Environ(), append(engine.env, "GOPROXY=off")...)
	var stderr bytes.Buffer
	build.Stderr = &stderr
	start := time.Now()
	out, err := build.Output()
	if err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, stderr.String())
	}
	t.Logf("FIGURE image: built in %s", time.Since(start).Round(time.Millisecond))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	tag := lines[len(lines)-1]
	version, revision := versionOf(t, root)
	if tag != "kilolock:"+version {
		t.Fatalf("scripts/image.sh built %q, want kilolock:%s", tag, version)
	}

	cfg := inspectImage(t, engine, tag)
	checkConfig(t, cfg, version, revision)

	fs := exportImage(t, engine, tag)
	checkFilesystem(t, fs)
	serveFromImage(t, fs, cfg, version)
}

// engine is the container engine found: its command and the environment
// it needs (a storage driver that works here).
type engine struct {
	name string
	env  []string
}

func (e engine) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, e.name, args...)
	cmd.Env = append(os.Environ(), e.env...)
	return cmd
}

// containerEngine finds podman, or a docker whose engine answers, as
// scripts/image.sh does.
func containerEngine(t *testing.T) engine {
	t.Helper()
	for _, e := range []engine{
		{"podman", []string{"CONTAINER_ENGINE=podman"}},
		{"podman", []string{"CONTAINER_ENGINE=podman", "STORAGE_DRIVER=vfs"}},
		{"docker", []string{"CONTAINER_ENGINE=docker"}},
	} {
		if _, err := exec.LookPath(e.name); err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		err := e.command(ctx, "info").Run()
		cancel()
		if err == nil {
			return e
		}
	}
	tofu.Unavailable(t, "no container engine answers: install podman (apt-get install podman) or start docker")
	return engine{}
}

// versionOf is the version and revision make image stamps.
func versionOf(t *testing.T, root string) (version, revision string) {
	t.Helper()
	cmd := exec.Command("bash", "scripts/version.sh")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/version.sh: %v", err)
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "github.com/kilolock/kilolock/internal/buildinfo.Version="); ok {
			version = v
		}
	}
	cmd = exec.Command("git", "rev-parse", "HEAD")
	cmd.Dir = root
	if out, err = cmd.Output(); err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	return version, strings.TrimSpace(string(out))
}

func inspectImage(t *testing.T, e engine, tag string) imageConfig {
	t.Helper()
	out, err := e.command(t.Context(), "image", "inspect", tag).Output()
	if err != nil {
		t.Fatalf("%s image inspect %s: %v", e.name, tag, err)
	}
	var images []struct{ Config imageConfig }
	if err := json.Unmarshal(out, &images); err != nil || len(images) != 1 {
		t.Fatalf("%s image inspect %s: %v\n%.500s", e.name, tag, err, out)
	}
	return images[0].Config
}

// checkConfig checks what a platform relies on: a non-root user, kld as
// the entrypoint, the volume and port, kld's defaults inside the image,
// and the labels that say where the image came from.
func checkConfig(t *testing.T, cfg imageConfig, version, revision string) {
	t.Helper()
	if cfg.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cfg.User)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/usr/local/bin/kld"}) {
		t.Errorf("entrypoint %q, want [/usr/local/bin/kld]", cfg.Entrypoint)
	}
	if _, ok := cfg.Volumes["/data"]; !ok || len(cfg.Volumes) != 1 {
		t.Errorf("volumes %v, want /data alone", cfg.Volumes)
	}
	if _, ok := cfg.ExposedPorts["8080/tcp"]; !ok || len(cfg.ExposedPorts) != 1 {
		t.Errorf("exposed ports %v, want 8080/tcp alone", cfg.ExposedPorts)
	}
	if !slices.Contains(cfg.Env, "KL_LISTEN=0.0.0.0:8080") {
		t.Errorf("environment %q lacks KL_LISTEN=0.0.0.0:8080", cfg.Env)
	}
	// kld's default database is ./kilolock.db: in the volume. The image
	// sets no KL_DATABASE_URL, which kl would read too and then refuse
	// --server beside it.
	if cfg.WorkingDir != "/data" || slices.ContainsFunc(cfg.Env, func(kv string) bool { return strings.HasPrefix(kv, "KL_DATABASE_URL=") }) {
		t.Errorf("working directory %q, environment %q: want /data, where kld's default ./kilolock.db lands, and no KL_DATABASE_URL", cfg.WorkingDir, cfg.Env)
	}
	for key, want := range map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source":   "https://github.com/kilolock/kilolock",
	} {
		if got := cfg.Labels[key]; got != want {
			t.Errorf("label %s = %q, want %q", key, got, want)
		}
	}
}

// exportImage exports the filesystem of a container created (never
// started) from tag and unpacks it into a new directory, owners included
// when the test runs as root.
func exportImage(t *testing.T, e engine, tag string) string {
	t.Helper()
	ctx := t.Context()
	out, err := e.command(ctx, "create", tag).Output()
	if err != nil {
		t.Fatalf("%s create %s: %v", e.name, tag, err)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { e.command(context.Background(), "rm", "--force", id).Run() })
	dir := t.TempDir()
	archive := filepath.Join(dir, "fs.tar")
	if out, err := e.command(ctx, "export", "--output", archive, id).CombinedOutput(); err != nil {
		t.Fatalf("%s export: %v\n%s", e.name, err, out)
	}
	fs := filepath.Join(dir, "root")
	if err := untar(archive, fs); err != nil {
		t.Fatalf("unpack the exported filesystem: %v", err)
	}
	return fs
}

func untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean("/" + h.Name)
		if name == "/" {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		mode := h.FileInfo().Mode() & (os.ModePerm | os.ModeSticky | os.ModeSetuid | os.ModeSetgid)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			w, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(w, tr)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
			continue // a link's own mode and owner do not matter
		case tar.TypeLink:
			if err := os.Link(filepath.Join(dir, filepath.FromSlash(path.Clean("/"+h.Linkname))), target); err != nil {
				return err
			}
			continue
		default:
			return fmt.Errorf("%s: unexpected entry type %c", h.Name, h.Typeflag)
		}
		if err := os.Chmod(target, mode); err != nil {
			return err
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				return err
			}
		}
	}
}

// checkFilesystem checks the image holds what it promises and nothing
// else: no base image's files.
func checkFilesystem(t *testing.T, fs string) {
	t.Helper()
	var unexpected []string
	allowed := []string{"/usr/local/bin/kld", "/usr/local/bin/kl", "/etc/passwd", "/etc/group", "/etc/ssl/certs/ca-certificates.crt", "/usr/share/zoneinfo/"}
	err := filepath.Walk(fs, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		name := "/" + filepath.ToSlash(strings.TrimPrefix(p, fs+string(filepath.Separator)))
		if !slices.ContainsFunc(allowed, func(a string) bool { return name == a || strings.HasSuffix(a, "/") && strings.HasPrefix(name, a) }) {
			unexpected = append(unexpected, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(unexpected) > 0 {
		t.Errorf("the image holds files it should not (a base image's?): %q", unexpected)
	}
	for _, bin := range []string{"kld", "kl"} {
		f, err := elf.Open(filepath.Join(fs, "usr/local/bin", bin))
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		libs, _ := f.ImportedLibraries()
		interp := slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
		f.Close()
		if interp || len(libs) > 0 {
			t.Errorf("%s is linked dynamically (interpreter %v, libraries %q): the image has no libc", bin, interp, libs)
		}
	}
	passwd, _ := os.ReadFile(filepath.Join(fs, "etc/passwd"))
	group, _ := os.ReadFile(filepath.Join(fs, "etc/group"))
	if !strings.Contains(string(passwd), ":x:65532:65532:") || !strings.Contains(string(group), ":x:65532:") {
		t.Errorf("no user and group 65532:\n%s\n%s", passwd, group)
	}
	pem, _ := os.ReadFile(filepath.Join(fs, "etc/ssl/certs/ca-certificates.crt"))
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		t.Errorf("the image's CA bundle (%d bytes) holds no certificate", len(pem))
	}
	tz, err := os.ReadFile(filepath.Join(fs, "usr/share/zoneinfo/Europe/Paris"))
	if _, lerr := time.LoadLocationFromTZData("Europe/Paris", tz); err != nil || lerr != nil {
		t.Errorf("the image's zoneinfo has no Europe/Paris: %v %v", err, lerr)
	}
	for dir, want := range map[string]os.FileMode{"data": 0o755, "tmp": 0o777 | os.ModeSticky} {
		info, err := os.Stat(filepath.Join(fs, dir))
		if err != nil || info.Mode()&(os.ModePerm|os.ModeSticky) != want {
			t.Errorf("/%s: %v %v, want a directory of mode %v", dir, info.Mode(), err, want)
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 && dir == "data" && (st.Uid != 65532 || st.Gid != 65532) {
			t.Errorf("/data is owned by %d:%d, want the image's user 65532:65532", st.Uid, st.Gid)
		}
	}
}

// serveFromImage runs the image's entrypoint from fs as the image would
// (see TestImage), drives a real tofu apply through it, and checks that
// the state went into the image's /data and that the image's kl reads it.
func serveFromImage(t *testing.T, fs string, cfg imageConfig, version string) {
	t.Helper()
	env := slices.DeleteFunc(slices.Clone(cfg.Env), func(kv string) bool { return strings.HasPrefix(kv, "KL_LISTEN=") })
	env = append(env, "KL_LISTEN=127.0.0.1:0")
	database := "/data/kilolock.db" // ./kilolock.db in the image's working directory
	asImage := func(bin string, args ...string) *exec.Cmd {
		if os.Geteuid() != 0 {
			cmd := exec.Command(filepath.Join(fs, bin), args...)
			cmd.Dir = filepath.Join(fs, cfg.WorkingDir)
			cmd.Env = append(slices.Clone(env), "SSL_CERT_FILE="+filepath.Join(fs, "etc/ssl/certs/ca-certificates.crt"), "ZONEINFO="+filepath.Join(fs, "usr/share/zoneinfo"))
			return cmd
		}
		uid, gid, _ := strings.Cut(cfg.User, ":")
		u, _ := strconv.Atoi(uid)
		g, _ := strconv.Atoi(gid)
		cmd := exec.Command(bin, args...)
		cmd.Dir = cfg.WorkingDir // inside the chroot
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: fs, Credential: &syscall.Credential{Uid: uint32(u), Gid: uint32(g)}}
		return cmd
	}
	if os.Geteuid() != 0 {
		t.Log("not root: running the exported kld without chroot, its paths pointed into the export")
	}
	srv := tofu.StartCommand(t, asImage(cfg.Entrypoint[0]), database)

	wd := tofu.NewWorkdir(t, srv.Backend("image")+`
resource "terraform_data" "app" {
  count = 3
  input = "from-the-image-${count.index}"
}
output "inputs" {
  value = terraform_data.app[*].output
}
`)
	wd.Must("init", "-no-color")
	wd.Must("apply", "-auto-approve", "-no-color")
	if stdout, stderr, code := wd.Run("plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after the apply: exit %d, want 0 (no changes)\n%s\n%s", code, stdout, stderr)
	}

	resp, err := http.Get(srv.URL + "/versionz")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Version string }
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || v.Version != version {
		t.Errorf("/versionz of the image's kld: %q %v, want %s (the image's label)", v.Version, err, version)
	}
	info, err := os.Stat(filepath.Join(fs, database))
	if err != nil || info.Size() == 0 {
		t.Fatalf("the state is not in the image's %s: %v", database, err)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 && st.Uid != 65532 {
		t.Errorf("%s was written by uid %d, want the image's user 65532", database, st.Uid)
	}

	kl := asImage("/usr/local/bin/kl", "--server", srv.URL, "history", "image")
	out, err := kl.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "apply") {
		t.Errorf("the image's kl history image: %v\n%s", err, out)
	}
}
