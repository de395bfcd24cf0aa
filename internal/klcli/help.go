package klcli

import (
	"fmt"
	"strings"
)

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
