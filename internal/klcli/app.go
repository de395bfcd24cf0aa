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
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/buildinfo"
	"github.com/kilolock/kilolock/internal/progress"
)

// App is kl's command grammar, parsed by kong: global flags and one struct
// per command, each with a Run method that kong calls with the Globals.
// cmd/kl only parses, runs and maps the error to an exit code.
type App struct {
	Globals

	Status     StatusCmd     `cmd:"" help:"Show a state: version, lineage, lock holders, apply runs in flight, instances by type."`
	Plan       PlanCmd       `cmd:"" help:"Plan with the real CLI within a scope and write a plan spec: what it writes and reads, the reservations it needs."`
	Apply      ApplyCmds     `cmd:"" help:"Apply within a scope; --orchestrated reserves first. kl apply abort stops an orchestrated apply. See kl apply --help."`
	History    HistoryCmd    `cmd:"" help:"List a state's versions, newest first; with --address, the versions that changed one address."`
	Show       ShowCmd       `cmd:"" help:"Show a version's summary and instances, or one instance's attributes with --address."`
	Diff       DiffCmd       `cmd:"" help:"Show what changed between two versions, by address and attribute path."`
	Graph      GraphCmd      `cmd:"" help:"Show the dependency cone of instances: what rests on them (--dependents) or what they rest on (--dependencies), at any version."`
	Rollback   RollbackCmds  `cmd:"" help:"kl rollback NAME --to REF, or kl rollback resource NAME ADDR --to REF: roll back to an earlier version (a dry run unless --apply --yes)."`
	Tag        TagCmds       `cmd:"" help:"Name versions of a state: kl tag set NAME TAG REF, kl tag list NAME, kl tag unset NAME TAG."`
	Drift      DriftCmds     `cmd:"" help:"Check a state against the real infrastructure (the CLI's refresh-only plan) and list what drifted."`
	Conflicts  ConflictsCmd  `cmd:"" help:"List a state's rejected commits, newest first: who, what addresses, who won, what next."`
	States     StatesCmd     `cmd:"" help:"List the states."`
	Query      QueryCmd      `cmd:"" help:"Run a read-only SQL query on the store; with an automation token or a PAT (--token), on the states it may read."`
	Search     SearchCmd     `cmd:"" help:"Search the current versions of every state you may read: by type, address pattern, attribute, text, state; --duplicates lists objects more than one state records."`
	Export     ExportCmd     `cmd:"" help:"Write a version of a state to stdout as a state file (for tofu state push)."`
	Import     ImportCmd     `cmd:"" help:"Import a state file as a new version (source import), under the lineage guard."`
	Version    VersionCmd    `cmd:"" help:"Show kl's version, and the server's with --server."`
	Workspace  WorkspaceCmds `cmd:"" help:"Manage workspaces (control plane: a server with --token klo_…, or --database directly)."`
	Env        EnvCmds       `cmd:"" help:"Manage a workspace's environments (control plane)."`
	Token      TokenCmds     `cmd:"" help:"Manage automation tokens (control plane)."`
	Pat        PATCmds       `cmd:"" name:"pat" help:"Manage personal access tokens (control plane)."`
	Grant      GrantCmds     `cmd:"" help:"Manage the grants of personal access tokens (control plane)."`
	Trust      TrustCmds     `cmd:"" help:"Manage trust policies: CI jobs authenticate with their OIDC ID token, no stored secret (control plane). See kl trust --help."`
	Member     MemberCmds    `cmd:"" help:"Manage a workspace's members (control plane)."`
	Audit      AuditCmd      `cmd:"" help:"Show the audit log, newest first (control plane)."`
	Quota      QuotaCmds     `cmd:"" help:"Quotas: a state's and its environment's headroom (remaining), refusals (status), a saved plan's admission (check), limits (set, list). See kl quota --help."`
	Whoami     WhoamiCmd     `cmd:"" help:"Show what the token given with --token reaches: environments, backend paths, expiry."`
	Backup     BackupCmd     `cmd:"" help:"Write a consistent online backup of the whole store to a file (--database, or --server with the operator token)."`
	Restore    RestoreCmd    `cmd:"" help:"Load a backup into an empty database of either store: kl restore --database URL FILE."`
	Retention  RetentionCmds `cmd:"" help:"Retention: policies per server, environment or state (list, set, unset), pruning (apply [--dry-run]) and what was pruned. See kl retention --help."`
	Keys       KeysCmds      `cmd:"" help:"Encryption at rest: generate a key, list the keys that wrap the states' data keys, rotate them (kl keys rotate)."`
	Completion CompletionCmd `cmd:"" help:"Print the shell script that completes kl's commands, flags and state names: source <(kl completion bash)."`
	State      struct {
		List    StateListCmd    `cmd:"" help:"List the addresses in a state's current version, optionally matching a pattern."`
		Show    StateShowCmd    `cmd:"" help:"Show one instance of a state's current version."`
		Rm      StateRmCmd      `cmd:"" help:"Remove instances, resources or modules from a state (a new version)."`
		Mv      StateMvCmd      `cmd:"" help:"Move an instance, resource or module to another address (a new version); with --to-state, into another state (one transaction, a new version of each)."`
		Split   StateSplitCmd   `cmd:"" help:"Move addresses into a new state of the same environment (one transaction)."`
		Merge   StateMergeCmd   `cmd:"" help:"Move everything of a state into another, then archive it (one transaction)."`
		Config  StateConfigCmd  `cmd:"" help:"Show a state's settings, or change them: its lock mode, how plans lock, whether it may change lineage, whether it requires client-side encryption. Example: kl state config prod --exclusive-locks=false."`
		Pull    StatePullCmd    `cmd:"" help:"Write a version of a state to stdout; with --address, a slice of it."`
		Archive StateArchiveCmd `cmd:"" help:"Archive a tenant's state: it refuses writes until restored (control plane)."`
		Restore StateRestoreCmd `cmd:"" help:"Restore an archived tenant state (control plane)."`
	} `cmd:"" help:"Operate on one state."`
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

// with opens the backend g names, runs f on a CLI over it and closes it.
func (g *Globals) with(ctx context.Context, json bool, f func(*CLI) error) error {
	b, err := Open(ctx, Target{Server: g.Server, Database: g.Database, KeyFile: g.KeyFile, Token: g.Token, Timeout: g.Timeout, Actor: g.Actor})
	if err != nil {
		return err
	}
	defer b.Close()
	return f(&CLI{Backend: b, Out: g.out(), Documents: g.documents(), JSON: json, Progress: g.progress(json)})
}

// warnMissingState says on stderr when --state names no state: a limit or
// a policy may be set before a state's first write, so the command goes
// on, but a misspelt name no longer passes silently. Nothing is said when
// the state cannot be asked about (no server, no right to read it).
func (g *Globals) warnMissingState(ctx context.Context, state string) {
	b, err := Open(ctx, Target{Server: g.Server, Database: g.Database, KeyFile: g.KeyFile, Token: g.Token, Timeout: g.Timeout, Actor: g.Actor})
	if err != nil {
		return
	}
	defer b.Close()
	if _, err := b.Status(ctx, state); errors.Is(err, kilolock.ErrNotFound) {
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

// StatusCmd is kl status.
type StatusCmd struct {
	JSONFlag
	Name string `arg:"" help:"State name." predictor:"state"`
}

// Run runs the command.
func (c *StatusCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Status(ctx, c.Name) })
}

// HistoryCmd is kl history.
type HistoryCmd struct {
	JSONFlag
	Name     string `arg:"" help:"State name." predictor:"state"`
	Limit    int    `help:"Show at most N versions." default:"20" placeholder:"N"`
	Before   int64  `help:"Show only versions numbered below M (for paging)." placeholder:"M"`
	Rejected bool   `help:"List the rejected commits instead (as kl conflicts does)."`
	Address  string `help:"List the versions that added, changed or removed this instance or resource, with what changed." placeholder:"ADDR"`
}

// Run runs the command.
func (c *HistoryCmd) Run(ctx context.Context, g *Globals) error {
	if c.Rejected && c.Before != 0 {
		return &UsageError{Message: "--before pages versions, not rejected commits", Hint: "use kl history NAME --rejected --limit N"}
	}
	if c.Address != "" && (c.Rejected || c.Before != 0) {
		return &UsageError{Message: "--address lists every change of one address; it takes neither --rejected nor --before", Hint: "use kl history NAME --address ADDR"}
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error {
		switch {
		case c.Rejected:
			return cli.Conflicts(ctx, c.Name, c.Limit)
		case c.Address != "":
			return cli.AddressHistory(ctx, c.Name, c.Address)
		}
		return cli.History(ctx, c.Name, kilolock.HistoryOptions{Limit: c.Limit, Before: c.Before})
	})
}

// ShowCmd is kl show.
type ShowCmd struct {
	JSONFlag
	Name string `arg:"" help:"State name." predictor:"state"`
	Ref  string `arg:"" optional:"" help:"Version: ${version_ref}"`
	VersionFlag
	Address string `help:"Show this instance's attributes, sensitive values masked." placeholder:"ADDR"`
}

// Run runs the command.
func (c *ShowCmd) Run(ctx context.Context, g *Globals) error {
	ref, err := versionRef(c.Ref, c.Version)
	if err != nil {
		return err
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Show(ctx, c.Name, ref, c.Address) })
}

// DiffCmd is kl diff.
type DiffCmd struct {
	JSONFlag
	Name string `arg:"" help:"State name." predictor:"state"`
	From string `arg:"" help:"The older version: ${version_ref}"`
	To   string `arg:"" optional:"" help:"The newer version (default latest)."`
}

// Run runs the command.
func (c *DiffCmd) Run(ctx context.Context, g *Globals) error {
	from, err := refArg(c.From)
	if err != nil {
		return err
	}
	to, err := refArg(c.To)
	if err != nil {
		return err
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Diff(ctx, c.Name, from, to) })
}

// RollbackCmds are kl rollback NAME and kl rollback resource.
type RollbackCmds struct {
	State    RollbackStateCmd    `cmd:"" default:"withargs" help:"Roll a whole state back; the word state may be left out. Example: kl rollback prod --to @3 (a dry run), then kl rollback prod --to @3 --apply --yes."`
	Resource RollbackResourceCmd `cmd:"" help:"Roll one instance, or a resource with all its instances, back; merged onto the current version. Example: kl rollback resource prod aws_instance.web --to pre-migration."`
}

// rollbackFlags are the flags every rollback takes.
type rollbackFlags struct {
	JSONFlag
	To     string `required:"" help:"The version to roll back to: ${version_ref}" placeholder:"REF"`
	Apply  bool   `help:"Append the rollback as a new version (needs --yes). Without it, a dry run that writes nothing."`
	Yes    bool   `help:"Confirm --apply."`
	DryRun bool   `name:"dry-run" help:"Show what the rollback would do; write nothing (the default of kl rollback; the flag every writing command takes)."`
}

func (f *rollbackFlags) run(ctx context.Context, g *Globals, name, address string) error {
	ref, err := refArg(f.To)
	if err != nil {
		return err
	}
	if f.Apply && f.DryRun {
		return &UsageError{Message: "--dry-run and --apply contradict each other", Hint: "drop --apply to preview, or --dry-run to write (with --yes)"}
	}
	if f.Apply && !f.Yes { // refused before anything is dialed
		return (&CLI{}).Rollback(ctx, name, RollbackRequest{Apply: true}, false)
	}
	return g.with(ctx, f.JSON, func(cli *CLI) error {
		return cli.Rollback(ctx, name, RollbackRequest{To: ref, Address: address, Apply: f.Apply}, f.Yes)
	})
}

// RollbackStateCmd is kl rollback NAME --to REF.
type RollbackStateCmd struct {
	rollbackFlags
	Name string `arg:"" help:"State name." predictor:"state"`
}

// Run runs the command.
func (c *RollbackStateCmd) Run(ctx context.Context, g *Globals) error {
	return c.run(ctx, g, c.Name, "")
}

// RollbackResourceCmd is kl rollback resource NAME ADDR --to REF; the
// state and the address were flags before (--state, --address), kept as
// deprecated aliases.
type RollbackResourceCmd struct {
	rollbackFlags
	Name        string `arg:"" optional:"" help:"State name." predictor:"state"`
	Addr        string `arg:"" optional:"" name:"address" help:"An instance (aws_instance.web[0]) or a resource with all its instances (aws_instance.web)."`
	StateFlag   string `name:"state" hidden:"" help:"Deprecated: the state name, now the first argument." placeholder:"NAME" predictor:"state"`
	AddressFlag string `name:"address" hidden:"" help:"Deprecated: the address, now the second argument." placeholder:"ADDR"`
}

// Run runs the command.
func (c *RollbackResourceCmd) Run(ctx context.Context, g *Globals) error {
	const usage = "kl rollback resource NAME ADDR --to REF"
	name, err := oneOf("the state name", c.Name, c.StateFlag, "--state", usage)
	if err != nil {
		return err
	}
	addr, err := oneOf("the address", c.Addr, c.AddressFlag, "--address", usage)
	if err != nil {
		return err
	}
	if c.StateFlag != "" || c.AddressFlag != "" {
		fmt.Fprintf(g.stderr(), "kl: warning: --state and --address of kl rollback resource are deprecated; use kl rollback resource %s %s --to %s\n", name, addr, c.To)
	}
	return c.run(ctx, g, name, addr)
}

// oneOf is a value given as an argument or with its deprecated flag, not
// both unless they agree, and not neither.
func oneOf(what, arg, flag, flagName, usage string) (string, error) {
	switch {
	case arg != "" && flag != "" && arg != flag:
		return "", &UsageError{Message: fmt.Sprintf("%s given twice: %s and %s %s", what, arg, flagName, flag), Hint: "give it once, as an argument: " + usage}
	case arg == "" && flag == "":
		return "", &UsageError{Message: "missing " + what, Hint: usage}
	case arg == "":
		return flag, nil
	}
	return arg, nil
}

// ConflictsCmd is kl conflicts.
type ConflictsCmd struct {
	JSONFlag
	Name  string `arg:"" help:"State name." predictor:"state"`
	Limit int    `help:"Show at most N rejected commits." default:"20" placeholder:"N"`
}

// Run runs the command.
func (c *ConflictsCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Conflicts(ctx, c.Name, c.Limit) })
}

// StatesCmd is kl states.
type StatesCmd struct {
	JSONFlag
}

// Run runs the command.
func (c *StatesCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.States(ctx) })
}

// QueryCmd is kl query.
type QueryCmd struct {
	JSONFlag
	SQL  []string `arg:"" optional:"" name:"sql" help:"One SQL statement (quote it; words are joined by spaces); - reads it from stdin. It may start with a -- comment. It runs read-only."`
	File string   `help:"Read the SQL statement from this file (- is stdin), e.g. one of docs/queries/*.sql." placeholder:"FILE" type:"path"`
}

// Run runs the command.
func (c *QueryCmd) Run(ctx context.Context, g *Globals) error {
	sql, err := c.statement(os.Stdin)
	if err != nil {
		return err
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Query(ctx, sql) })
}

// statement is the SQL to run: the arguments, the file named by --file, or
// stdin for "-".
func (c *QueryCmd) statement(stdin io.Reader) (string, error) {
	src := c.File
	switch {
	case src != "" && len(c.SQL) > 0:
		return "", &UsageError{Message: "give the SQL either as an argument or with --file, not both", Hint: "kl query --file docs/queries/inventory_by_type.sql"}
	case len(c.SQL) == 1 && c.SQL[0] == "-":
		src = "-"
	case src == "":
		return strings.Join(c.SQL, " "), nil
	}
	var (
		b   []byte
		err error
	)
	if src == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(src)
	}
	if err != nil {
		return "", withHint(err, "name a file holding one SQL statement, e.g. docs/queries/inventory_by_type.sql")
	}
	return string(b), nil
}

// ExportCmd is kl export.
type ExportCmd struct {
	Name string `arg:"" help:"State name." predictor:"state"`
	Ref  string `arg:"" optional:"" help:"Version: ${version_ref}"`
	VersionFlag
}

// Run runs the command.
func (c *ExportCmd) Run(ctx context.Context, g *Globals) error {
	ref, err := versionRef(c.Ref, c.Version)
	if err != nil {
		return err
	}
	return g.with(ctx, false, func(cli *CLI) error { return cli.Export(ctx, c.Name, ref) })
}

// ImportCmd is kl import.
type ImportCmd struct {
	JSONFlag
	Name  string `arg:"" help:"State name (created when missing)." predictor:"state"`
	File  string `arg:"" help:"State file to import; - reads stdin." type:"path"`
	Force bool   `help:"Import a state of another lineage over a non-empty state (its history is kept)."`
}

// Run runs the command.
func (c *ImportCmd) Run(ctx context.Context, g *Globals) error {
	var (
		data []byte
		err  error
	)
	if c.File == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = readFile(c.File, g.progress(c.JSON))
	}
	if err != nil {
		return withHint(err, "name a state file, e.g. one written by `tofu state pull` or `kl export`")
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Import(ctx, c.Name, c.File, data, c.Force) })
}

// VersionCmd is kl version.
type VersionCmd struct {
	JSONFlag
}

// Run runs the command.
func (c *VersionCmd) Run(ctx context.Context, g *Globals) error {
	info := buildinfo.Info()
	client := VersionInfo{Version: info.Version, Commit: info.Commit, Date: info.Date, GoVersion: info.GoVersion}
	if g.Server == "" {
		// No server named: show kl's own version without dialing anyone.
		cli := &CLI{Out: g.out(), JSON: c.JSON}
		return cli.Version(ctx, client)
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Version(ctx, client) })
}

// StateListCmd is kl state list.
type StateListCmd struct {
	JSONFlag
	Name    string `arg:"" help:"State name." predictor:"state"`
	Pattern string `arg:"" optional:"" help:"Only addresses matching this: a prefix (module.demo, aws_instance.web) or a pattern with *."`
}

// Run runs the command.
func (c *StateListCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.StateList(ctx, c.Name, c.Pattern) })
}

// StateShowCmd is kl state show.
type StateShowCmd struct {
	JSONFlag
	Name    string `arg:"" help:"State name." predictor:"state"`
	Address string `arg:"" help:"Instance address."`
}

// Run runs the command.
func (c *StateShowCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.StateShow(ctx, c.Name, c.Address) })
}

// StateRmCmd is kl state rm NAME ADDR…, as tofu state rm takes them;
// --address is the older spelling, kept.
type StateRmCmd struct {
	JSONFlag
	Name      string   `arg:"" help:"State name." predictor:"state"`
	Addresses []string `arg:"" optional:"" name:"address" help:"Addresses to remove: instances, resources or modules."`
	Address   []string `name:"address" sep:"none" help:"An address to remove (repeat the flag for more); the same as the arguments." placeholder:"ADDR"`
	DryRun    bool     `help:"Show what would be removed; write nothing."`
}

// Run runs the command.
func (c *StateRmCmd) Run(ctx context.Context, g *Globals) error {
	addrs := append(append([]string(nil), c.Addresses...), c.Address...)
	if len(addrs) == 0 {
		return &UsageError{Message: "no address to remove", Hint: "kl state rm NAME ADDR… (kl state rm prod aws_instance.old --dry-run)"}
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.StateRm(ctx, c.Name, addrs, c.DryRun) })
}

// StateMvCmd is kl state mv NAME SRC DST, as tofu state mv takes them;
// --from and --to are the older spelling, kept as deprecated aliases.
type StateMvCmd struct {
	JSONFlag
	Name    string `arg:"" help:"State name." predictor:"state"`
	Src     string `arg:"" optional:"" help:"Address to move: an instance or a resource (with --to-state, a module too)."`
	Dst     string `arg:"" optional:"" help:"Its new address, e.g. module.demo.aws_instance.web (with --to-state it defaults to SRC)."`
	From    string `hidden:"" help:"Deprecated: the address to move, now the second argument." placeholder:"ADDR"`
	To      string `hidden:"" help:"Deprecated: the new address, now the third argument." placeholder:"ADDR"`
	ToState string `name:"to-state" help:"Move into this other state, in one transaction with the source." placeholder:"OTHER"`
	DryRun  bool   `help:"Show the move; write nothing."`
}

// Run runs the command.
func (c *StateMvCmd) Run(ctx context.Context, g *Globals) error {
	usage := "kl state mv NAME SRC DST, or kl state mv NAME SRC [DST] --to-state OTHER"
	src, err := oneOf("the address to move", c.Src, c.From, "--from", usage)
	if err != nil {
		return err
	}
	if c.From != "" || c.To != "" {
		fmt.Fprintf(g.stderr(), "kl: warning: --from and --to of kl state mv are deprecated; give the addresses as arguments: %s\n", usage)
	}
	if c.ToState != "" {
		dst := c.Dst
		if dst == "" {
			dst = c.To
		}
		return c.moveToState(ctx, g, src, dst)
	}
	dst, err := oneOf("the new address", c.Dst, c.To, "--to", usage)
	if err != nil {
		return err
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.StateMv(ctx, c.Name, src, dst, c.DryRun) })
}

// StateConfigCmd is kl state config.
type StateConfigCmd struct {
	JSONFlag
	Name               string `arg:"" help:"State name." predictor:"state"`
	ExclusiveLocks     *bool  `negatable:"" help:"=true: one lock holder at a time (classic); =false: optimistic, many holders, each write merged or refused with 409. Only while nobody holds a lock."`
	AllowLineageChange *bool  `negatable:"" help:"Let the next writes carry another lineage (=false to refuse again)."`
	SharedPlanLocks    *bool  `negatable:"" help:"=true (the default): a plan takes a shared read lock, granted beside an apply and other plans; =false: plans wait like applies."`
	// RequireClientEncryption is named as the state's setting is.
	RequireClientEncryption *bool `negatable:"" help:"Refuse plaintext writes: the state takes only OpenTofu client-side encrypted ones (terraform { encryption { … } }); =false lifts it. Its environment may require it too (kl env config)."`
}

// Run runs the command.
func (c *StateConfigCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error {
		return cli.ConfigureState(ctx, c.Name, StateSettings{ExclusiveLocks: c.ExclusiveLocks, AllowLineageChange: c.AllowLineageChange,
			SharedPlanLocks: c.SharedPlanLocks, RequireClientEncryption: c.RequireClientEncryption})
	})
}

// StatePullCmd is kl state pull.
type StatePullCmd struct {
	Name    string   `arg:"" help:"State name." predictor:"state"`
	Ref     string   `arg:"" optional:"" help:"Version: ${version_ref}"`
	Version string   `help:"The version, as REF takes it (--version 3 is @3)." placeholder:"REF"`
	Address []string `sep:"none" help:"Pull a slice: only this instance or resource (repeat the flag for more) and its cone, with every output, the same lineage and serial." placeholder:"ADDR"`
	Cone    string   `help:"What the slice adds to the addresses: dependencies (what they rest on, the default), dependents (what rests on them) or none." placeholder:"CONE"`
}

// Run runs the command.
func (c *StatePullCmd) Run(ctx context.Context, g *Globals) error {
	ref, err := versionRef(c.Ref, c.Version)
	if err != nil {
		return err
	}
	if len(c.Address) == 0 {
		if c.Cone != "" {
			return &UsageError{Message: "--cone shapes a slice, and no --address was given", Hint: "use kl state pull NAME --address ADDR --cone " + c.Cone}
		}
		return g.with(ctx, false, func(cli *CLI) error { return cli.Pull(ctx, c.Name, ref) })
	}
	cone, err := history.ParseSliceCone(c.Cone)
	if err != nil {
		return err
	}
	return g.with(ctx, false, func(cli *CLI) error { return cli.PullSlice(ctx, c.Name, ref, c.Address, cone) })
}
