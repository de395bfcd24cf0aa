package postgres

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/kilolock/kilolock/store/sqlstore"
)

// PostgreSQL's text holds neither a NUL nor bytes that are not UTF-8, which
// a state may carry in a name, an index key or an attribute (OpenTofu
// writes `for_each = toset(["a\u0000b"])` without complaint), and which
// the SQLite store keeps as they are. So every string the store sends is
// escaped, and every string it reads back unescaped: a NUL, a DEL (the
// escape itself) and each byte of an invalid UTF-8 sequence travel as DEL
// and two hex digits. Other text, nearly all of it, is left alone and
// costs one scan. The escape keeps prefixes (an instance ID still begins
// with its address), so range scans over IDs find what they should; the
// byte order of escaped IDs can differ, so the reads that promise byte
// order sort what they read (see sortedByID).
//
// Users' queries see the escaped text.

const escapeByte = 0x7f

// needsEscape reports whether s would change under escapeText.
func needsEscape(s string) bool {
	return strings.IndexByte(s, 0) >= 0 || strings.IndexByte(s, escapeByte) >= 0 || !utf8.ValidString(s)
}

// escapeText is s as PostgreSQL's text can hold it.
func escapeText(s string) string {
	if !needsEscape(s) {
		return s
	}
	const hexDigits = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || r == 0 || r == escapeByte {
			b.WriteByte(escapeByte)
			b.WriteByte(hexDigits[s[i]>>4])
			b.WriteByte(hexDigits[s[i]&0xf])
			i++
			continue
		}
		b.WriteString(s[i : i+n])
		i += n
	}
	return b.String()
}

// unescapeText reverses escapeText.
func unescapeText(s string) string {
	if strings.IndexByte(s, escapeByte) < 0 {
		return s
	}
	return string(unescapeBytes([]byte(s)))
}

// unescapeBytes reverses escapeText on text read as bytes, in place.
func unescapeBytes(s []byte) []byte {
	if bytes.IndexByte(s, escapeByte) < 0 {
		return s
	}
	unhex := func(c byte) (byte, bool) {
		switch {
		case '0' <= c && c <= '9':
			return c - '0', true
		case 'a' <= c && c <= 'f':
			return c - 'a' + 10, true
		}
		return 0, false
	}
	b := s[:0]
	for i := 0; i < len(s); i++ {
		if s[i] == escapeByte && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				b = append(b, hi<<4|lo)
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return b
}

// escapeArgs escapes the strings among args (string, *string, []string
// and []any), leaving args itself as it is.
func escapeArgs(args []any) []any { return sqlstore.MapArgs(args, escapeArg) }

func escapeArg(a any) (any, bool) {
	switch v := a.(type) {
	case string:
		if needsEscape(v) {
			return escapeText(v), true
		}
	case *string:
		if v != nil && needsEscape(*v) {
			return escapeText(*v), true
		}
	case []any:
		if len(v) > 0 {
			w := escapeArgs(v)
			return w, &w[0] != &v[0]
		}
	case []string:
		if slices.ContainsFunc(v, needsEscape) {
			w := make([]string, len(v))
			for k, s := range v {
				w[k] = escapeText(s)
			}
			return w, true
		}
	}
	return nil, false
}
