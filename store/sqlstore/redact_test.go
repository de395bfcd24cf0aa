package sqlstore

import "testing"

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`bad JSON path: 'x"B-API-KEY"'`, `bad JSON path`},
		{`malformed JSON`, `malformed JSON`},
		{`invalid input syntax for type integer: "xws_b.env_b.net"`, `invalid input syntax for type integer`},
		{`value "99999999999" is out of range for type integer`, `value … is out of range for type integer`},
		{`relation "xsecret" does not exist`, `relation … does not exist`},
		{`unrecognized format() type specifier "s"`, `unrecognized format() type specifier …`},
		{`requested character too large for encoding: 1114112`, `requested character too large for encoding`},
		{`value too long for type character varying(3)`, `value too long for type character varying(…)`},
		{`unterminated 'quote of a secret`, `unterminated …`},
		{`division by zero`, `division by zero`},
		{`relation "x["aws_instance.web"]" does not exist`, `relation … does not exist`},
		{`schema "xa'b" does not exist`, `schema … does not exist`},
		{`relation "x:secret" does not exist`, `relation …`},
		{`invalid value "xsecret" for "YYYY"`, `invalid value …`},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
