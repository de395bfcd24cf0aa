package buildinfo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Version, Commit and Date are stamped by the linker from
// scripts/version.sh:
//
//	go build -ldflags "$(scripts/version.sh)" ./cmd/kld
//
// Empty when the binary was built without them.
var (
	Version string
	Commit  string
	Date    string // RFC 3339, UTC
)

// BuildInfo describes the running binary.
type BuildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	// Date is when the binary was built when the linker stamped it, else
	// the date of its commit (the toolchain's VCS stamp, or the
	// checkout's); empty when neither is known.
	Date      string `json:"date,omitempty"`
	GoVersion string `json:"go_version"`
}

// String is the one-line form kl and kld print:
// "0.1.0-dev.42 (commit 0123456789ab, 2026-12-01T11:29:28Z, go1.26.8)".
func (bi BuildInfo) String() string {
	parts := []string{"commit " + bi.Commit}
	if bi.Date != "" {
		parts = append(parts, bi.Date)
	}
	return bi.Version + " (" + strings.Join(append(parts, bi.GoVersion), ", ") + ")"
}

// devVersion is the version of a build that knows nothing better.
const devVersion = "0.1.0-dev"

// Info returns the binary's version, commit, date and Go version: the
// linker-set values when present, else what the Go toolchain recorded
// (the module version of a `go install …@vX.Y.Z`, the VCS revision and
// time of a `go build -buildvcs=true` in a checkout), else, for a binary
// built from a checkout with no stamp at all (`go run`, or GOFLAGS with
// -buildvcs=false), what git says of the checkout it was built from, when
// that is still there.
func Info() BuildInfo {
	bi := BuildInfo{Version: Version, Commit: Commit, Date: Date, GoVersion: runtime.Version()}
	if bi.Version != "" && bi.Commit != "" && bi.Date != "" {
		return bi
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		fromBuildInfo(&bi, info)
	}
	if bi.Commit == "" {
		fromCheckout(&bi, sourceDir())
	}
	if bi.Version == "" {
		bi.Version = devVersion
	}
	if bi.Commit == "" {
		bi.Commit = "unknown"
	}
	return bi
}

// fromBuildInfo fills what ldflags left empty from the toolchain's record.
func fromBuildInfo(bi *BuildInfo, info *debug.BuildInfo) {
	if bi.Version == "" {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			bi.Version = strings.TrimPrefix(v, "v")
		}
	}
	var revision, at string
	var modified bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if bi.Commit == "" && revision != "" {
		bi.Commit = shortHash(revision)
		if modified {
			bi.Commit += "-dirty"
		}
	}
	if bi.Date == "" {
		bi.Date = at
	}
}

// sourceDir is the directory this file was compiled from: in a checkout
// (go run, go build), the checkout; under -trimpath, no directory.
func sourceDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	return filepath.Dir(file)
}

// fromCheckout fills the commit and its date from the git checkout at dir,
// if there is one and git runs; it leaves them empty otherwise. A checkout
// with changes is marked "-dirty".
func fromCheckout(bi *BuildInfo, dir string) {
	if dir == "" {
		return
	}
	if _, err := os.Stat(dir); err != nil {
		return
	}
	git := func(args ...string) (string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).Output()
		return strings.TrimSpace(string(out)), err == nil
	}
	head, ok := git("log", "-1", "--format=%H %cI")
	hash, at, found := strings.Cut(head, " ")
	if !ok || !found || len(hash) < 12 {
		return
	}
	bi.Commit = shortHash(hash)
	if status, ok := git("status", "--porcelain", "--untracked-files=no"); ok && status != "" {
		bi.Commit += "-dirty"
	}
	if bi.Date == "" {
		if t, err := time.Parse(time.RFC3339, at); err == nil {
			bi.Date = t.UTC().Format(time.RFC3339)
		}
	}
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// FromDescribe turns the output of `git describe --tags --long` into a
// semantic version:
//
//	v1.2.3-0-gHASH   (HEAD is the tag)       -> 1.2.3
//	v1.2.3           (the short form)        -> 1.2.3
//	v1.2.3-5-gHASH   (5 commits after it)    -> 1.2.4-dev.5
//	v1.2.3-rc.1-5-gHASH                      -> 1.2.3-rc.1.dev.5
//	5-gHASH          (no tag; 5 commits)     -> 0.1.0-dev.5
//
// The last form is not git's: with no tag, describe fails, and
// scripts/version.sh gives the commit count in describe's shape. A
// "-dirty" suffix becomes "+dirty" build metadata. Anything else gives
// 0.1.0-dev.
func FromDescribe(describe string) string {
	d := strings.TrimSpace(describe)
	var meta string
	if rest, ok := strings.CutSuffix(d, "-dirty"); ok {
		d, meta = rest, "+dirty"
	}
	tag, n, ok := splitDescribe(d)
	if !ok {
		tag, n = d, 0
	}
	if tag == "" {
		if !ok {
			return devVersion + meta
		}
		return devVersion + "." + strconv.Itoa(n) + meta
	}
	base, ok := strings.CutPrefix(tag, "v")
	if !ok {
		base = tag
	}
	core, pre, hasPre := strings.Cut(base, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return devVersion + meta
	}
	var nums [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return devVersion + meta
		}
		nums[i] = v
	}
	switch {
	case n == 0:
		return base + meta
	case hasPre:
		// After a pre-release tag, the next release is that same version:
		// 1.2.3-rc.1.dev.5 sorts after 1.2.3-rc.1 and before 1.2.3.
		return core + "-" + pre + ".dev." + strconv.Itoa(n) + meta
	}
	return strconv.Itoa(nums[0]) + "." + strconv.Itoa(nums[1]) + "." + strconv.Itoa(nums[2]+1) + "-dev." + strconv.Itoa(n) + meta
}

// splitDescribe splits "TAG-N-gHASH" (or "N-gHASH" with no tag) into its tag
// and N.
func splitDescribe(d string) (tag string, n int, ok bool) {
	i := strings.LastIndex(d, "-g")
	if i < 0 || !isHex(d[i+2:]) {
		return "", 0, false
	}
	head := d[:i]
	j := strings.LastIndexByte(head, '-')
	count := head[j+1:]
	n, err := strconv.Atoi(count)
	if err != nil || n < 0 {
		return "", 0, false
	}
	if j < 0 {
		return "", n, true
	}
	return head[:j], n, true
}

func isHex(s string) bool {
	if len(s) < 4 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
