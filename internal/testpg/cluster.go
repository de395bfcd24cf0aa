package testpg

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// EnvBinDir names an optional environment variable holding the directory of
// initdb and pg_ctl, when they are neither on PATH nor in a usual place.
const EnvBinDir = "KL_TEST_PG_BINDIR"

// missingError says PostgreSQL cannot be run here at all: a skip outside CI.
type missingError struct{ reason string }

func (e *missingError) Error() string { return e.reason }

// cluster is a throwaway PostgreSQL cluster living in one temporary
// directory: data/, the Unix socket, postgres.log and setup.log.
type cluster struct {
	dir    string
	initdb string
	pgCtl  string
	owner  *account // the user the server runs as; nil for ourselves
}

// The port only names the socket file: the server listens on no TCP port,
// and the socket lives in a directory of its own, so nothing can clash.
const port = 5432

func (c *cluster) data() string    { return filepath.Join(c.dir, "data") }
func (c *cluster) logFile() string { return filepath.Join(c.dir, "postgres.log") }

// url returns the URL of database db over the cluster's Unix socket.
func (c *cluster) url(db string) string {
	q := url.Values{"host": {c.dir}, "port": {strconv.Itoa(port)}, "sslmode": {"disable"}}
	return "postgres://postgres@/" + db + "?" + q.Encode()
}

func startCluster() (*cluster, error) {
	initdb, pgCtl, err := findBinaries()
	if err != nil {
		return nil, err
	}
	var owner *account
	if os.Geteuid() == 0 {
		// initdb refuses to run as root.
		if owner, err = lookupAccount("postgres"); err != nil {
			return nil, &missingError{fmt.Sprintf("running as root, and there is no \"postgres\" user to run PostgreSQL as: %v", err)}
		}
	}
	base := tempBase(owner != nil)
	reapStale(base, pgCtl, owner)

	dir, err := os.MkdirTemp(base, "kl-testpg-")
	if err != nil {
		return nil, fmt.Errorf("create the cluster directory: %w", err)
	}
	c := &cluster{dir: dir, initdb: initdb, pgCtl: pgCtl, owner: owner}
	fail := func(err error) (*cluster, error) {
		tail := c.logTail()
		c.stop()
		return nil, fmt.Errorf("%w%s", err, tail)
	}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fail(err)
	}
	if owner != nil {
		for _, p := range []string{dir, filepath.Join(dir, "owner.pid")} {
			if err := os.Chown(p, owner.uid, owner.gid); err != nil {
				return fail(fmt.Errorf("chown %s to postgres: %w", p, err))
			}
		}
	}
	if err := c.run(initdb, "-D", c.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return fail(fmt.Errorf("initdb: %w", err))
	}
	conf := strings.Join([]string{
		"",
		"# testpg: a throwaway cluster, reachable only through its socket",
		"listen_addresses = ''",
		fmt.Sprintf("unix_socket_directories = '%s'", strings.ReplaceAll(dir, "'", "''")),
		fmt.Sprintf("port = %d", port),
		"fsync = off",
		"synchronous_commit = off",
		"full_page_writes = off",
		"max_connections = 300",
		"",
	}, "\n")
	if err := appendFile(filepath.Join(c.data(), "postgresql.conf"), conf); err != nil {
		return fail(err)
	}
	if err := c.run(pgCtl, "-D", c.data(), "-l", c.logFile(), "-w", "-t", "60", "start"); err != nil {
		return fail(fmt.Errorf("pg_ctl start: %w", err))
	}
	return c, nil
}

// stop stops the server at once (nothing in it is worth a clean shutdown)
// and removes its directory.
func (c *cluster) stop() {
	if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); err == nil {
		_ = c.run(c.pgCtl, "-D", c.data(), "-m", "immediate", "-w", "-t", "30", "stop")
	}
	_ = os.RemoveAll(c.dir)
}

// run runs a PostgreSQL program as the cluster's owner, its output appended
// to setup.log. Output goes to a file, not a pipe: pg_ctl leaves a server
// running that must not hold our pipe open.
func (c *cluster) run(prog string, args ...string) error {
	logPath := filepath.Join(c.dir, "setup.log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o666)
	if err != nil {
		return err
	}
	defer f.Close()
	if c.owner != nil {
		_ = os.Chown(logPath, c.owner.uid, c.owner.gid)
	}
	fmt.Fprintf(f, "$ %s %s\n", prog, strings.Join(args, " "))
	cmd := exec.Command(prog, args...)
	cmd.Dir = c.dir
	cmd.Env = cleanEnv()
	cmd.Stdout = f
	cmd.Stderr = f
	setProcAttr(cmd, c.owner)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(prog), err)
	}
	return nil
}

// logTail returns the ends of setup.log and postgres.log, to explain a
// failure.
func (c *cluster) logTail() string {
	var b strings.Builder
	for _, name := range []string{"setup.log", "postgres.log"} {
		p := filepath.Join(c.dir, name)
		if t := tail(p, 4096); t != "" {
			fmt.Fprintf(&b, "\n--- %s ---\n%s", p, t)
		}
	}
	return b.String()
}

func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cleanEnv is our environment without the PG* variables that would point
// the programs at another cluster, and in the C locale.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "LANG=C")
}

// tempBase picks where the cluster directory goes: os.TempDir, unless the
// socket path would be too long (about 100 bytes on most systems) or, when
// the server runs as another user, that user could not reach it.
func tempBase(otherUser bool) string {
	base := os.TempDir()
	if len(base) > 60 || (otherUser && !traversable(base)) {
		return "/tmp"
	}
	return base
}

// traversable reports whether every directory from / down to dir lets
// others through.
func traversable(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		st, err := os.Stat(dir)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

// reapStale stops and removes the clusters of test binaries that died
// before Main could stop them (a panic, a timeout, SIGKILL).
func reapStale(base, pgCtl string, owner *account) {
	dirs, _ := filepath.Glob(filepath.Join(base, "kl-testpg-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner.pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || processAlive(pid) {
			continue
		}
		c := &cluster{dir: dir, pgCtl: pgCtl, owner: owner}
		c.stop()
	}
}

// findBinaries finds initdb and pg_ctl: in $KL_TEST_PG_BINDIR when it is
// set (and only there), else on PATH or in the usual install directories,
// newest major version first.
func findBinaries() (initdb, pgCtl string, err error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "pg_ctl")
		if isExecutable(i) && isExecutable(p) {
			return i, p, nil
		}
		return "", "", &missingError{fmt.Sprintf("no initdb and pg_ctl in $%s (%s)", EnvBinDir, d)}
	}
	var dirs []string
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	var found []string
	for _, pat := range []string{
		"/usr/lib/postgresql/*/bin",
		"/usr/pgsql-*/bin",
		"/usr/local/pgsql/bin",
		"/opt/homebrew/opt/postgresql@*/bin",
		"/usr/local/opt/postgresql@*/bin",
		"/opt/homebrew/bin",
		"/usr/local/bin",
	} {
		m, _ := filepath.Glob(pat)
		found = append(found, m...)
	}
	sort.SliceStable(found, func(i, j int) bool { return majorVersion(found[i]) > majorVersion(found[j]) })
	dirs = append(dirs, found...)
	for _, d := range dirs {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "pg_ctl")
		if isExecutable(i) && isExecutable(p) {
			return i, p, nil
		}
	}
	return "", "", &missingError{"PostgreSQL is not installed: no initdb and pg_ctl on PATH or in /usr/lib/postgresql/*/bin (or set $" + EnvBinDir + ")"}
}

var versionRE = regexp.MustCompile(`(\d+)`)

func majorVersion(dir string) int {
	m := versionRE.FindAllString(dir, -1)
	if len(m) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(m[len(m)-1])
	return n
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode().Perm()&0o111 != 0
}

// account is a user to run the server as.
type account struct {
	uid, gid int
}

func lookupAccount(name string) (*account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s has no numeric uid and gid", name)
	}
	return &account{uid: uid, gid: gid}, nil
}

// Tool returns the path of a PostgreSQL program installed beside initdb
// (pg_dump, pg_autoctl, …). It skips tb when the program is not
// installed, or fails it when CI=true.
func Tool(tb testing.TB, name string) string {
	tb.Helper()
	initdb, _, err := findBinaries()
	if err == nil {
		p := filepath.Join(filepath.Dir(initdb), name)
		if isExecutable(p) {
			return p
		}
		err = &missingError{fmt.Sprintf("%s is not installed beside %s", name, initdb)}
	}
	if inCI() {
		tb.Fatalf("testpg: %v; CI is set, so this fails rather than skips", err)
	}
	tb.Skipf("testpg: %v", err)
	return ""
}
