package graph

import (
	"strconv"
	"strings"
)

// Address returns the resource's canonical address without an index key,
// e.g. `module.a["x"].data.aws_ami.ubuntu`.
func (r Resource) Address() string {
	var b strings.Builder
	if r.Module != "" {
		b.WriteString(r.Module)
		b.WriteByte('.')
	}
	if r.Mode == "data" {
		b.WriteString("data.")
	}
	b.WriteString(r.Type)
	b.WriteByte('.')
	b.WriteString(r.Name)
	return b.String()
}

// String returns the key as it appears in an address: "", "[0]" or `["a"]`.
func (k IndexKey) String() string {
	switch k.Kind {
	case IntKey:
		return "[" + strconv.FormatInt(k.Int, 10) + "]"
	case StringKey:
		return "[" + quoteHCL(k.Str) + "]"
	}
	return ""
}

// JSON returns the key as the state file's "index_key" value, or "null".
func (k IndexKey) JSON() string {
	switch k.Kind {
	case IntKey:
		return strconv.FormatInt(k.Int, 10)
	case StringKey:
		b, _ := marshalNoEscape(k.Str)
		return string(b)
	}
	return "null"
}

// Address returns the instance's canonical address, e.g.
// `module.a["x"].aws_instance.web[0]`. Deposed objects share the address of
// their current object; Key tells them apart.
func (i *Instance) Address() string { return i.Resource.Address() + i.Key.String() }

// ID returns what identifies the instance object within a state: its
// address, plus " (deposed object KEY)" for a deposed object.
func (i *Instance) ID() string {
	if i.Deposed != "" {
		return i.Address() + " (deposed object " + i.Deposed + ")"
	}
	return i.Address()
}

// quoteHCL quotes s the way Terraform writes string index keys in addresses:
// HCL string syntax, so that an address can be parsed back.
func quoteHCL(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '$', '%':
			b.WriteByte(c)
			if i+1 < len(s) && s[i+1] == '{' {
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
