package klcli

import "strings"

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
