package klcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/progress"
)

// App is kl's command grammar, parsed by kong: global flags and one struct
// per command or group of commands. Kong calls the Run method of the
// selected command, or of its group (which answers by the subcommand's
// name), with the Globals. cmd/kl only parses, runs and maps the error to
// an exit code.
type App struct {
	Globals

	Status     StatusCmd     `cmd:"" help:"Show a state: version, lineage, lock holders, apply runs in flight, instances by type." example:"kl status prod"`
	Plan       PlanCmd       `cmd:"" help:"Plan with the real CLI within a scope and write a plan spec: what it writes and reads, the reservations it needs." example:"kl plan --target aws_instance.web -o web.json"`
	Apply      ApplyCmds     `cmd:"" help:"Apply within a scope; --orchestrated reserves first. kl apply abort stops an orchestrated apply. See kl apply --help."`
	History    HistoryCmd    `cmd:"" help:"List a state's versions, newest first; with --address, the versions that changed one address." example:"kl history prod --limit 5"`
	Show       ShowCmd       `cmd:"" help:"Show a version's summary and instances, or one instance's attributes with --address." example:"kl show prod @3 --address aws_instance.web"`
	Diff       DiffCmd       `cmd:"" help:"Show what changed between two versions, by address and attribute path." example:"kl diff prod @3 latest"`
	Graph      GraphCmd      `cmd:"" help:"Show the dependency cone of instances: what rests on them (--dependents) or what they rest on (--dependencies), at any version." example:"kl graph prod --address aws_vpc.main --depth 2"`
	Rollback   RollbackCmds  `cmd:"" help:"kl rollback NAME --to REF, or kl rollback resource NAME ADDR --to REF: roll back to an earlier version (a dry run unless --apply --yes)."`
	Tag        TagCmds       `cmd:"" help:"Name versions of a state: kl tag set NAME TAG REF, kl tag list NAME, kl tag unset NAME TAG."`
	Drift      DriftCmds     `cmd:"" help:"Check a state against the real infrastructure (the CLI's refresh-only plan) and list what drifted."`
	Conflicts  ConflictsCmd  `cmd:"" help:"List a state's rejected commits, newest first: who, what addresses, who won, what next." example:"kl conflicts prod --limit 5"`
	States     StatesCmd     `cmd:"" help:"List the states." example:"kl states --json"`
	Query      QueryCmd      `cmd:"" help:"Run a read-only SQL query on the store; with an automation token or a PAT (--token), on the states it may read." example:"kl query --file docs/queries/inventory_by_type.sql"`
	Search     SearchCmd     `cmd:"" help:"Search the current versions of every state you may read: by type, address pattern, attribute, text, state; --duplicates lists objects more than one state records." example:"kl search --type aws_instance --attr tags.team=payments"`
	Export     ExportCmd     `cmd:"" help:"Write a version of a state to stdout as a state file (for tofu state push)." example:"kl export prod @3 > prod-3.tfstate"`
	Import     ImportCmd     `cmd:"" help:"Import a state file as a new version (source import), under the lineage guard." example:"kl import prod terraform.tfstate"`
	Version    VersionCmd    `cmd:"" help:"Show kl's version, and the server's with --server." example:"kl --server http://127.0.0.1:8080 version"`
	Workspace  WorkspaceCmds `cmd:"" help:"Manage workspaces (control plane: a server with --token klo_…, or --database directly)."`
	Env        EnvCmds       `cmd:"" help:"Manage a workspace's environments (control plane)."`
	Token      TokenCmds     `cmd:"" help:"Manage automation tokens (control plane)."`
	Pat        PATCmds       `cmd:"" name:"pat" help:"Manage personal access tokens (control plane)."`
	Grant      GrantCmds     `cmd:"" help:"Manage the grants of personal access tokens (control plane)."`
	Trust      TrustCmds     `cmd:"" help:"Manage trust policies: CI jobs authenticate with their OIDC ID token, no stored secret (control plane). See kl trust --help."`
	Member     MemberCmds    `cmd:"" help:"Manage a workspace's members (control plane)."`
	Audit      AuditCmd      `cmd:"" help:"Show the audit log, newest first (control plane)." example:"kl audit --denied --limit 20"`
	Quota      QuotaCmds     `cmd:"" help:"Quotas: a state's and its environment's headroom (remaining), refusals (status), a saved plan's admission (check), limits (set, list). See kl quota --help."`
	Whoami     WhoamiCmd     `cmd:"" help:"Show what the token given with --token reaches: environments, backend paths, expiry." example:"kl --token \"$KL_TOKEN\" whoami"`
	Backup     BackupCmd     `cmd:"" help:"Write a consistent online backup of the whole store to a file (--database, or --server with the operator token)." example:"kl --database kilolock.db backup -o kilolock-backup.json.gz"`
	Restore    RestoreCmd    `cmd:"" help:"Load a backup into an empty database of either store: kl restore --database URL FILE." example:"kl --database restored.db restore kilolock-backup.json.gz"`
	Retention  RetentionCmds `cmd:"" help:"Retention: policies per server, environment or state (list, set, unset), pruning (apply [--dry-run]) and what was pruned. See kl retention --help."`
	Keys       KeysCmds      `cmd:"" help:"Encryption at rest: generate a key, list the keys that wrap the states' data keys, rotate them (kl keys rotate)."`
	Completion CompletionCmd `cmd:"" help:"Print the shell script that completes kl's commands, flags and state names: source <(kl completion bash)." example:"source <(kl completion bash)"`
	State      StateCmds     `cmd:"" help:"Operate on one state."`
}

// Globals are kl's global flags, given to every command's Run.
type Globals struct {
	Server   string        `help:"Base URL of the kld server (default ${default_server} when no --database is given)." env:"KL_SERVER" placeholder:"URL"`
	Database string        `help:"Open the database directly instead: a postgres:// URL or a SQLite file path." env:"KL_DATABASE_URL" placeholder:"URL"`
	Token    string        `help:"Bearer token for the server." env:"KL_TOKEN"`
	Timeout  time.Duration `help:"Timeout of each request to the server." default:"30s"`
	KeyFile  string        `name:"encryption-key-file" help:"With --database: the keys of encryption at rest, as kld takes them (KL_ENCRYPTION_KEY may hold keys too)." env:"KL_ENCRYPTION_KEY_FILE" placeholder:"FILE"`
	Actor    string        `help:"Who the versions kl makes (rollback, state rm/mv, import) are recorded as made by, when the server knows no identity, and the audit actor (db:NAME) of tenancy changes made with --database (default kl)." env:"KL_ACTOR"`
	LogLevel string        `name:"log-level" default:"info" env:"KL_LOG_LEVEL" enum:"debug,info,warn,error" help:"Least severe of kl's own messages shown on stderr: info shows the progress of imports, exports and orchestrated applies; warn or error only warnings and errors (the same variable sets kld's level)."`
	Verbose  bool          `help:"Show the IaC CLI's own output (its plan, init and apply) on stderr, beside kl's summary; --log-level debug shows it too."`

	// Out receives the commands' output; nil means os.Stdout.
	Out io.Writer `kong:"-"`
	// Stderr receives the progress of long work, shown only when it is a
	// terminal; nil means os.Stderr.
	Stderr *os.File `kong:"-"`
}

// PreferFlags settles a server and a database both set when one came from
// the environment: the one given on the command line wins, so that
// `kl --database kilolock.db …` works in a shell that exports KL_SERVER
// (and --server where KL_DATABASE_URL is exported). Both given as flags,
// or both from the environment, stay an error. getenv is os.Getenv.
func (g *Globals) PreferFlags(getenv func(string) string) {
	if g.Server == "" || g.Database == "" {
		return
	}
	serverFromEnv := getenv("KL_SERVER") == g.Server
	databaseFromEnv := getenv("KL_DATABASE_URL") == g.Database
	switch {
	case serverFromEnv && !databaseFromEnv:
		g.Server = ""
	case databaseFromEnv && !serverFromEnv:
		g.Database = ""
	}
}

// progress is how long work shows its progress: on Stderr when it is a
// terminal and the output is not --json, else not at all.
func (g *Globals) progress(json bool) progress.Reporter {
	f := g.Stderr
	if f == nil {
		f = os.Stderr
	}
	return progress.Auto(f, json || g.quiet())
}

// quiet reports whether --log-level (KL_LOG_LEVEL) hides kl's
// informational messages.
func (g *Globals) quiet() bool { return g.LogLevel == "warn" || g.LogLevel == "error" }

// open opens the Conn to the server or database g names.
func (g *Globals) open(ctx context.Context) (*Conn, error) {
	return Open(ctx, Target{Server: g.Server, Database: g.Database, KeyFile: g.KeyFile, Token: g.Token, Timeout: g.Timeout, Actor: g.Actor})
}

// with opens the Conn g names, runs f on a CLI over it and closes it.
func (g *Globals) with(ctx context.Context, json bool, f func(*CLI) error) error {
	b, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	return f(&CLI{Conn: b, Out: g.out(), Documents: g.documents(), JSON: json, Progress: g.progress(json)})
}

// warnMissingState says on stderr when --state names no state: a limit or
// a policy may be set before a state's first write, so the command goes
// on, but a misspelt name no longer passes silently. Nothing is said when
// the state cannot be asked about (no right to read it). b is the Conn
// the command goes on with.
func (g *Globals) warnMissingState(ctx context.Context, b *Conn, state string) {
	if _, err := b.api.Status(ctx, state); errors.Is(err, kilolock.ErrNotFound) {
		fmt.Fprintf(g.stderr(), "kl: warning: state %s does not exist (yet): what is set for it applies once it is written; list the states with kl states\n", state)
	}
}

// out is where commands print: Out (stdout), its control characters
// escaped, since much of what kl prints came from a client.
func (g *Globals) out() io.Writer { return escaped(g.documents()) }

// documents is Out as it is, for state files written byte for byte.
func (g *Globals) documents() io.Writer {
	if g.Out == nil {
		return os.Stdout
	}
	return g.Out
}

// stderr is where kl's own messages go, escaped as out is.
func (g *Globals) stderr() io.Writer {
	if g.Stderr == nil {
		return escaped(os.Stderr)
	}
	return escaped(g.Stderr)
}

// cliOutput is where the IaC CLI's own output goes: stderr with --verbose
// or at log level debug, else nowhere (nil): kl prints its own summary.
func (g *Globals) cliOutput() io.Writer {
	if g.Verbose || g.LogLevel == "debug" {
		return g.stderr()
	}
	return nil
}

// JSONFlag is the --json flag of the commands that have a table.
type JSONFlag struct {
	JSON bool `name:"json" help:"Write JSON for scripts instead of a table."`
}

// stateArg is what a command on one state takes first: the state's name,
// and --json.
type stateArg struct {
	JSONFlag
	Name string `arg:"" help:"State name." predictor:"state"`
}

// Examples is the kong option that shows each command's example, its
// example tag, in its kl COMMAND --help, below its description (the
// command lists stay one line a command). TestEveryCommandHasAnExample
// keeps them whole.
func Examples() kong.Option {
	return kong.PostBuild(func(k *kong.Kong) error {
		var walk func(n *kong.Node)
		walk = func(n *kong.Node) {
			if ex := n.Tag.Get("example"); ex != "" && !strings.Contains(n.Help+n.Detail, "Example") {
				if n.Detail != "" {
					n.Detail += "\n\n"
				}
				n.Detail += "Example:\n\n  " + ex
			}
			for _, c := range n.Children {
				walk(c)
			}
		}
		walk(k.Model.Node)
		return nil
	})
}

// Vars are the variables of kl's help texts, for kong.New: the default
// server, and ${version_ref}, the one convention of every command that
// takes a version, as a positional REF or --version REF.
func Vars() kong.Vars {
	return kong.Vars{
		"default_server": DefaultServer,
		"version_ref":    "@N (@1 is the first; a bare N is @N too), latest or @latest (the default), @-K (K before the current one), serial:S (the newest with Terraform serial S), or a tag.",
	}
}

// refArg parses a version reference as every kl command takes it: "" and
// "latest" are @latest, a bare number N is @N, and the rest is
// kilolock.ParseVersionRef's (@N, @-K, serial:S, a tag). A tag is never a
// bare number nor "latest" (kilolock.ValidTagName), so neither form
// shadows one.
func refArg(s string) (kilolock.VersionRef, error) {
	switch {
	case s == "", s == "latest":
		return kilolock.Latest, nil
	case strings.Trim(s, "0123456789") == "":
		return kilolock.ParseVersionRef("@" + s)
	}
	return kilolock.ParseVersionRef(s)
}

// versionRef is the version a command names, as a positional REF or with
// --version REF; naming it both ways is refused unless they agree.
func versionRef(positional, flag string) (kilolock.VersionRef, error) {
	if positional != "" && flag != "" && positional != flag {
		return kilolock.VersionRef{}, &UsageError{Message: fmt.Sprintf("two versions given: %s and --version %s", positional, flag), Hint: "name the version once, e.g. kl show NAME @3"}
	}
	if positional == "" {
		positional = flag
	}
	return refArg(positional)
}

// VersionFlag is --version REF, the flag spelling of a command's
// positional REF.
type VersionFlag struct {
	Version string `help:"The version, as the positional REF takes it." placeholder:"REF"`
}

// ExitCodeDoc is one of kl's exit codes and what it means, as kl --help
// and docs/cli.md list them.
type ExitCodeDoc struct {
	Code    int
	Meaning string
}

// ExitCodes are the exit codes of every kl command, in order; the
// constants above are their names.
var ExitCodes = []ExitCodeDoc{
	{ExitOK, "the command did what was asked (a dry run included; kl quota check: within the limits, or past a soft one with a WARN line)"},
	{ExitError, "any other failure: a refused query, past a hard quota limit (kl quota check, kl plan, kl apply)"},
	{ExitUsage, "bad flags or arguments, or input the server rejects as invalid"},
	{ExitNotFound, "the state, version, run or address does not exist"},
	{ExitConflict, "locked by someone else, a lock ID mismatch, or a conflicting or stale write"},
	{ExitUnavailable, "the server or the database cannot be reached, or is busy: retry later"},
	{ExitBlocked, "kl apply --orchestrated gave up waiting for its reservations (--wait-timeout)"},
	{ExitAborted, "kl apply: the run was aborted (kl apply abort) or its lease ran out; the apply was stopped or its write refused"},
	{ExitCLI, "kl plan, kl apply, kl drift check: the IaC CLI (tofu or terraform) failed"},
	{130, "interrupted: Ctrl-C, SIGTERM, or a reader gone (kl … | head); the CLI is stopped gracefully and its lock released"},
}

// Description is kl's kl --help text: what kl is, its conventions, and
// its exit codes.
func Description() string {
	var b strings.Builder
	b.WriteString(`KiloLock client: states, history, diff, rollback, state operations, locks and SQL, through a kld server or on its database.

Conventions: a state is named by the first argument (NAME); a version by REF, positional or --version REF: @N (a bare N too), latest, @-K, serial:S or a tag; kl rollback previews unless --apply --yes, kl state rm|mv write unless --dry-run; --json (after the command, or before it) writes JSON for scripts. See docs/cli.md.

Exit codes:
`)
	for _, e := range ExitCodes {
		fmt.Fprintf(&b, "  %3d  %s\n", e.Code, wrap(e.Meaning, 72, "       "))
	}
	return strings.TrimRight(b.String(), "\n")
}

// wrap breaks s into lines of at most width characters, each after the
// first starting with indent (kong prints indented lines as they are).
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(s) {
		switch {
		case i == 0:
		case line+1+len(w) > width:
			b.WriteString("\n" + indent)
			line = 0
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}

// globalsWithValue are kl's global flags that take the next argument as
// their value, so that Args can find the command word after them.
var globalsWithValue = map[string]bool{
	"--server": true, "--database": true, "--token": true, "--timeout": true,
	"--encryption-key-file": true, "--actor": true, "--log-level": true,
}

// Args prepares kl's command line for parsing. The SQL of kl query may
// start with a comment, as every file in docs/queries does
// (`kl query "$(cat docs/queries/blast_radius.sql)"`), and an argument that
// starts with -- is otherwise taken for a flag. No flag's name holds a
// space or a line break, so such an argument of kl query is SQL: Args puts
// a line break before it, which SQL ignores and the parser takes for a
// positional argument. Every other argument is left as it is.
//
// --json is also taken before the command (kl --json history prod), as a
// global flag: Args moves it after the command, where each command with a
// table has it.
func Args(args []string) []string {
	args = jsonAfterCommand(args)
	cmd := commandIndex(args)
	if cmd < 0 || args[cmd] != "query" {
		return args
	}
	out := append([]string(nil), args...)
	for i := cmd + 1; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if a == "--file" {
			i++ // its value is a path, whatever it looks like
			continue
		}
		if sqlComment(a) {
			out[i] = "\n" + a
		}
	}
	return out
}

// sqlComment reports whether a starts with -- and cannot be a flag: the
// name before any = holds a space or a line break.
func sqlComment(a string) bool {
	if !strings.HasPrefix(a, "--") || a == "--" {
		return false
	}
	name, _, _ := strings.Cut(a[2:], "=")
	return name == "" || strings.ContainsAny(name, " \t\r\n")
}

// commandIndex is the index of the command word in args: the first
// argument that is no global flag nor a global flag's value; -1 when none.
func commandIndex(args []string) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return -1
		}
		if strings.HasPrefix(a, "-") {
			if globalsWithValue[a] {
				i++
			}
			continue
		}
		return i
	}
	return -1
}

// jsonAfterCommand moves a --json given before the command word to the
// end of the command line (before a -- that ends the flags).
func jsonAfterCommand(args []string) []string {
	cmd := commandIndex(args)
	if cmd < 0 {
		return args
	}
	var (
		out  []string
		json bool
	)
	for i, a := range args {
		if i < cmd && a == "--json" && (i == 0 || !globalsWithValue[args[i-1]]) {
			json = true
			continue
		}
		out = append(out, a)
	}
	if !json {
		return args
	}
	for i, a := range out {
		if a == "--" {
			return append(append(out[:i:i], "--json"), out[i:]...)
		}
	}
	return append(out, "--json")
}
