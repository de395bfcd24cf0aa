package klcli

import (
	"strings"

	"github.com/alecthomas/kong"
)

// examples are one example of each command, by its path, shown by
// kl COMMAND --help. TestEveryCommandHasAnExample keeps the list whole.
var examples = map[string]string{
	"status":            "kl status prod",
	"plan":              "kl plan --target aws_instance.web -o web.json",
	"apply run":         "kl apply --orchestrated --plan-spec web.json",
	"apply abort":       "kl apply abort --state prod --latest",
	"history":           "kl history prod --limit 5",
	"show":              "kl show prod @3 --address aws_instance.web",
	"diff":              "kl diff prod @3 latest",
	"graph":             "kl graph prod --address aws_vpc.main --depth 2",
	"tag set":           "kl tag set prod pre-migration @12 --description \"before the VPC move\"",
	"tag list":          "kl tag list prod",
	"tag unset":         "kl tag unset prod pre-migration",
	"drift check":       "kl drift check . --address aws_instance.web --cone",
	"drift list":        "kl drift list prod",
	"conflicts":         "kl conflicts prod --limit 5",
	"states":            "kl states --json",
	"query":             "kl query --file docs/queries/inventory_by_type.sql",
	"export":            "kl export prod @3 > prod-3.tfstate",
	"import":            "kl import prod terraform.tfstate",
	"version":           "kl --server http://127.0.0.1:8080 version",
	"workspace create":  "kl workspace create acme --owner alice",
	"workspace list":    "kl workspace list",
	"workspace suspend": "kl workspace suspend ws_0123456789abcdef",
	"workspace resume":  "kl workspace resume ws_0123456789abcdef",
	"env create":        "kl env create --workspace ws_0123456789abcdef prod",
	"env list":          "kl env list --workspace ws_0123456789abcdef",
	"env config":        "kl env config --workspace ws_0123456789abcdef env_0123456789abcdef --require-client-encryption",
	"token issue":       "kl token issue --env env_0123456789abcdef --scope read --expires-in 90d",
	"token list":        "kl token list",
	"token revoke":      "kl token revoke tok_0123456789abcdef",
	"pat create":        "kl pat create --user alice",
	"pat list":          "kl pat list",
	"pat delete":        "kl pat delete tok_0123456789abcdef",
	"grant add":         "kl grant add tok_0123456789abcdef env_0123456789abcdef",
	"grant revoke":      "kl grant revoke tok_0123456789abcdef env_0123456789abcdef",
	"grant list":        "kl grant list tok_0123456789abcdef",
	"member add":        "kl member add --workspace ws_0123456789abcdef bob --role admin",
	"member remove":     "kl member remove --workspace ws_0123456789abcdef bob",
	"member list":       "kl member list --workspace ws_0123456789abcdef",
	"audit":             "kl audit --denied --limit 20",
	"quota remaining":   "kl quota remaining --state prod",
	"quota status":      "kl quota status prod",
	"quota check":       "tofu plan -out plan.tfplan && kl quota check --tf-plan plan.tfplan",
	"quota set":         "kl quota set --state prod --soft 80 --hard 100",
	"quota list":        "kl quota list",
	"whoami":            "kl --token \"$KL_TOKEN\" whoami",
	"backup":            "kl --database kilolock.db backup -o kilolock-backup.json.gz",
	"restore":           "kl --database restored.db restore kilolock-backup.json.gz",
	"retention list":    "kl retention list",
	"retention set":     "kl retention set --state prod --keep-last 50 --keep-days 30",
	"retention unset":   "kl retention unset --state prod",
	"retention apply":   "kl retention apply --dry-run",
	"retention pruned":  "kl retention pruned prod",
	"keys generate":     "(umask 077; kl keys generate > keys)",
	"keys status":       "kl keys status",
	"keys rotate":       "kl keys rotate --no-wait",
	"completion":        "source <(kl completion bash)",
	"state list":        "kl state list prod module.network",
	"state show":        "kl state show prod 'aws_instance.web[0]'",
	"state rm":          "kl state rm prod aws_instance.old --dry-run",
	"state mv":          "kl state mv prod aws_instance.web module.app.aws_instance.web --dry-run",
	"state pull":        "kl state pull prod @3 > prod-3.tfstate",
	"state archive":     "kl state archive --workspace ws_0123456789abcdef --env env_0123456789abcdef old-app",
	"state restore":     "kl state restore --workspace ws_0123456789abcdef --env env_0123456789abcdef old-app",
	"state split":       "kl state split prod --to-state prod-net --address module.net --dry-run",
	"state merge":       "kl state merge prod-net --into prod --dry-run",
	"search":            "kl search --type aws_instance --attr tags.team=payments",
	"trust add":         "kl trust add --env env_0123456789abcdef --issuer https://token.actions.githubusercontent.com --audience https://kl.example.com --claim repository=acme/infra --scope read-write",
	"trust list":        "kl trust list",
	"trust remove":      "kl trust remove trs_0123456789abcdef",
}

// Examples is the kong option that shows each command's example in its
// kl COMMAND --help, below its description (the command lists stay one
// line a command).
func Examples() kong.Option {
	return kong.PostBuild(func(k *kong.Kong) error {
		var walk func(n *kong.Node)
		walk = func(n *kong.Node) {
			if ex, ok := examples[n.Path()]; ok && !strings.Contains(n.Help+n.Detail, "Example") {
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

// CommandExample returns the example of the command at path ("state mv"),
// "" when it has none.
func CommandExample(path string) string { return examples[path] }
