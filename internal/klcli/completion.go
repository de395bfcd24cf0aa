package klcli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/posener/complete"
	"github.com/willabides/kongplete"
)

// CompletionCmd is kl completion SHELL.
type CompletionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"The shell: bash, zsh or fish."`
}

// completionScripts make a shell ask kl itself (BIN, with COMP_LINE set)
// for the words that may come next.
var completionScripts = map[string]string{
	"bash": "complete -o default -C %[1]q kl\n",
	"zsh":  "autoload -U +X bashcompinit && bashcompinit\ncomplete -o default -C %[1]q kl\n",
	"fish": `function __kl_complete
    set -lx COMP_LINE (commandline -cp)
    test -z (commandline -ct)
    and set COMP_LINE "$COMP_LINE "
    %[1]q
end
complete -f -c kl -a "(__kl_complete)"
`,
}

// Run prints the completion script for the shell, naming this kl binary.
func (c *CompletionCmd) Run(g *Globals) error {
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("completion: find kl's own path: %w", err)
	}
	_, err = fmt.Fprintf(g.out(), completionScripts[c.Shell], bin)
	return err
}

// Complete answers a shell's completion request — kl run by the script
// of kl completion, with COMP_LINE set — and exits; without one it
// returns at once. Commands and flags come from the grammar, state names
// from the server or database the line (or the environment) names.
func Complete(parser *kong.Kong) {
	kongplete.Complete(parser, kongplete.WithPredictor("state", StatePredictor))
}

// StatePredictor predicts state names: the states of the server or
// database that the command line's --server, --database and --token (or
// KL_SERVER, KL_DATABASE_URL, KL_TOKEN) name, asked with a short timeout.
// Nothing is predicted when they cannot be reached.
var StatePredictor complete.Predictor = complete.PredictFunc(predictStates)

func predictStates(a complete.Args) []string {
	return statesFor(completionWords(a))
}

// completionWords are the words of the whole command line being
// completed: a predictor sees only those after its subcommand, and the
// global flags come before it.
func completionWords(a complete.Args) []string {
	if line := os.Getenv("COMP_LINE"); line != "" {
		return strings.Fields(line)
	}
	return a.Completed
}

// statesFor lists the state names of the backend words (a command line)
// name.
func statesFor(words []string) []string {
	t := Target{Server: os.Getenv("KL_SERVER"), Database: os.Getenv("KL_DATABASE_URL"), Token: os.Getenv("KL_TOKEN"), Timeout: 2 * time.Second}
	for i, w := range words {
		for flag, dst := range map[string]*string{"--server": &t.Server, "--database": &t.Database, "--token": &t.Token} {
			if v, ok := strings.CutPrefix(w, flag+"="); ok {
				*dst = v
			} else if w == flag && i+1 < len(words) {
				*dst = words[i+1]
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	b, err := Open(ctx, t)
	if err != nil {
		return nil
	}
	defer b.Close()
	l, err := b.api.States(ctx)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(l.States))
	for _, st := range l.States {
		names = append(names, st.Name)
	}
	return names
}
