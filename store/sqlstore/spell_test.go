package sqlstore

import (
	"strconv"
	"testing"
)

func TestSpell(t *testing.T) {
	words := map[string]string{"now": "kl_now()", "C": "", "texts": "(SELECT value AS k FROM json_each($$))"}
	s := NewSpell(func(n int) string { return "?" + strconv.Itoa(n) }, words)
	for _, tt := range []struct{ shared, want string }{
		{`SELECT $1, $12 FROM t`, `SELECT ?1, ?12 FROM t`},
		{`INSERT INTO t VALUES ($1, {now})`, `INSERT INTO t VALUES (?1, kl_now())`},
		{`SELECT u.k FROM {texts $3} AS u ORDER BY u.k{C}`, `SELECT u.k FROM (SELECT value AS k FROM json_each(?3)) AS u ORDER BY u.k`},
		// Not ours: left as they are.
		{`SELECT 1 WHERE x ~ '[0-9]{5}' AND y = '{' AND $$body$$`, `SELECT 1 WHERE x ~ '[0-9]{5}' AND y = '{' AND $$body$$`},
	} {
		if got := s.Of(tt.shared); got != tt.want {
			t.Errorf("Of(%q) = %q, want %q", tt.shared, got, tt.want)
		}
		if got := s.Of(tt.shared); got != tt.want {
			t.Errorf("Of(%q) a second time = %q", tt.shared, got)
		}
	}
}

func TestMapArgs(t *testing.T) {
	args := []any{"a", 1, "b"}
	upper := func(v any) (any, bool) {
		s, ok := v.(string)
		if !ok || s != "b" {
			return nil, false
		}
		return "B", true
	}
	got := MapArgs(args, upper)
	if got[0] != "a" || got[1] != 1 || got[2] != "B" || args[2] != "b" {
		t.Errorf("MapArgs = %v (args now %v), want [a 1 B] and args unchanged", got, args)
	}
	if same := MapArgs(args[:2], upper); &same[0] != &args[0] {
		t.Error("MapArgs copied args it did not change")
	}
}
