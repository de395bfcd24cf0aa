package inventory

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/reserve"
	"github.com/kilolock/kilolock/tenancy"
)

// DefaultLimit is how many hits a page holds when Filters.Limit is 0;
// MaxLimit is the most it may hold.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Filters are a search as a user writes it (kl search's flags, the API's
// query parameters). ParseQuery checks them.
type Filters struct {
	// Type is a resource type, matched exactly.
	Type string `json:"type,omitempty"`
	// Address is a reservation pattern: an instance (`aws_instance.web[0]`),
	// a resource (`aws_instance.web`), a module (`module.net.*`) or `*`.
	Address string `json:"address,omitempty"`
	// Attr are PATH=VALUE: the attribute at the dotted PATH
	// (`tags.Name`, `ingress.0.cidr_blocks.0`) is VALUE (a string, or a
	// number or bool as JSON spells it). Every one must hold.
	Attr []string `json:"attr,omitempty"`
	// Text is part of an attribute's key or value, without regard to case.
	Text string `json:"text,omitempty"`
	// State is a pattern of state names, `*` matching any run of
	// characters; a tenant's states match by their name within the
	// environment too.
	State string `json:"state,omitempty"`
	// Limit is the most hits of a page (0: DefaultLimit; at most MaxLimit).
	Limit int `json:"limit,omitempty"`
	// Cursor is the Next of the previous page.
	Cursor string `json:"cursor,omitempty"`
	// Data finds data sources too (an Address naming a data source
	// implies it).
	Data bool `json:"data,omitempty"`
}

// Query is a checked search: make one with ParseQuery.
type Query struct {
	// Scope, when not nil, is the states the caller may read (a tenant's
	// environments); nil is the operator's: every state.
	Scope *tenancy.QueryScope

	f       Filters
	pattern *reserve.Pattern
	attrs   []attrFilter
	text    string // lowercase
	scan    ScanFilter
	limit   int
}

type attrFilter struct {
	path  []string
	value string
}

// invalid is the error of a bad filter.
func invalid(code, msg, hint string) error {
	return &kilolock.InvalidError{Code: code, Message: msg, Hint: hint}
}

// ParseQuery checks f and makes the Query of it. A bad filter is a
// *kilolock.InvalidError whose Code names the filter (invalid_address,
// invalid_attr, invalid_limit, invalid_cursor, invalid_state_pattern) and
// whose Hint says how to write it.
func ParseQuery(f Filters) (*Query, error) {
	q := &Query{f: f, limit: f.Limit}
	q.scan.Type, q.scan.Data = f.Type, f.Data
	switch {
	case f.Limit < 0 || f.Limit > MaxLimit:
		return nil, invalid("invalid_limit", fmt.Sprintf("limit %d is out of range", f.Limit), fmt.Sprintf("give a limit from 1 to %d, or none for %d", MaxLimit, DefaultLimit))
	case f.Limit == 0:
		q.limit = DefaultLimit
	}
	if f.Address != "" {
		p, err := reserve.Parse(f.Address)
		if err != nil {
			return nil, invalid("invalid_address", "address: "+err.Error(), "write an instance (aws_instance.web[0]), a resource (aws_instance.web), a module (module.net.*) or *")
		}
		if strings.HasPrefix(p.String(), "output.") {
			return nil, invalid("invalid_address", fmt.Sprintf("address %q names an output; search finds resource instances", f.Address), "write a resource or module pattern, as in aws_instance.web or module.net.*")
		}
		q.pattern = &p
		narrowByAddress(&q.scan, f.Address)
	}
	for _, a := range f.Attr {
		path, value, ok := strings.Cut(a, "=")
		if !ok || path == "" {
			return nil, invalid("invalid_attr", fmt.Sprintf("attr %q is not PATH=VALUE", a), "write the attribute's dotted path, '=' and its value, as in tags.Name=web or ami=ami-0abc")
		}
		steps := strings.Split(path, ".")
		for _, s := range steps {
			if s == "" {
				return nil, invalid("invalid_attr", fmt.Sprintf("attr %q has an empty step in its path", a), "separate the steps of a path with single dots, as in tags.Name or ingress.0.from_port")
			}
		}
		q.attrs = append(q.attrs, attrFilter{path: steps, value: value})
	}
	if f.Text != "" {
		q.text = strings.ToLower(f.Text)
		if indexable(q.text) {
			q.scan.Text = q.text
		}
	}
	if f.State != "" {
		if strings.ContainsAny(f.State, "\x00") {
			return nil, invalid("invalid_state_pattern", "state pattern holds a NUL byte", "write a state name, with * for any run of characters")
		}
		like := likeOf(f.State)
		q.scan.StateLike = []string{like, `%.` + like}
	}
	if f.Cursor != "" {
		c, err := parseCursor(f.Cursor)
		if err != nil {
			return nil, invalid("invalid_cursor", "cursor is not one this server gave", "pass the next cursor of the previous page as it is, or none to start over")
		}
		q.scan.After = c
	}
	return q, nil
}

// narrowByAddress sets what of an address pattern a store can look up:
// a resource's type and name, or a pattern's first module call.
func narrowByAddress(s *ScanFilter, pattern string) {
	if pattern == "*" {
		return
	}
	if a, err := graph.ParseAddress(pattern); err == nil {
		s.Name = a.Resource.Name
		if s.Type == "" {
			s.Type = a.Resource.Type
		}
		if a.Resource.Mode == "data" {
			s.Data = true
		}
	}
	if strings.HasPrefix(pattern, "module.") {
		name := strings.TrimPrefix(pattern, "module.")
		if i := strings.IndexAny(name, ".["); i >= 0 {
			name = name[:i]
		}
		s.Module = "module." + name
	}
}

// likeOf is the LIKE pattern (escape '\') of a state pattern.
func likeOf(p string) string {
	var b strings.Builder
	for _, c := range p {
		switch c {
		case '*':
			b.WriteByte('%')
		case '%', '_', '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// globMatch reports whether name matches p, '*' matching any run.
func globMatch(p, name string) bool {
	parts := strings.Split(p, "*")
	if len(parts) == 1 {
		return p == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(name, part)
		if i < 0 {
			return false
		}
		name = name[i+len(part):]
	}
	return strings.HasSuffix(name, parts[len(parts)-1])
}

func parseCursor(s string) (Cursor, error) {
	var c Cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return c, err
	}
	if _, err := d.Token(); err != io.EOF {
		return c, fmt.Errorf("text after the cursor")
	}
	if c.StateID <= 0 || c.InstanceID == "" {
		return c, fmt.Errorf("empty cursor")
	}
	return c, nil
}

// String is the cursor as a page's Next gives it.
func (c Cursor) String() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Hit is one instance object a search found.
type Hit struct {
	// State is the state's name as the store knows it (a tenant's states
	// are "WORKSPACE.ENV.NAME").
	State string `json:"state"`
	// Version is the state's current version number.
	Version int64  `json:"version"`
	Address string `json:"address"`
	Deposed string `json:"deposed,omitempty"`
	Mode    string `json:"mode"`
	Type    string `json:"type"`
	// Paths are the dotted attribute paths that matched Attr and Text, in
	// order; empty when neither was given.
	Paths []string `json:"paths,omitempty"`
}

// Page is a page of hits, in state then address order.
type Page struct {
	Hits []Hit `json:"hits"`
	// Next is the cursor of the next page; "" when this page is the last.
	Next string `json:"next,omitempty"`
}

// Search runs q over st: the current versions of the states of q.Scope.
// It reads rows until the page is full (one more to know whether another
// page follows), so its memory is a page's.
func Search(ctx context.Context, st Store, q *Query) (*Page, error) {
	f := q.scan
	f.Scope = q.Scope
	page := &Page{Hits: []Hit{}}
	var (
		last Cursor
		more bool
	)
	err := st.ScanCurrent(ctx, f, func(r *Row) bool {
		hit, ok := q.match(r)
		if !ok {
			return true
		}
		if len(page.Hits) == q.limit {
			more = true
			return false
		}
		page.Hits = append(page.Hits, hit)
		last = Cursor{StateID: r.StateID, InstanceID: r.InstanceID}
		return true
	})
	if err != nil {
		return nil, err
	}
	if more {
		page.Next = last.String()
	}
	return page, nil
}

// match checks r against what the store could not: the address pattern,
// the state pattern, and the attributes and text of the masked object.
func (q *Query) match(r *Row) (Hit, bool) {
	hit := Hit{State: r.State, Version: r.Version, Address: r.Address, Deposed: r.Deposed, Mode: r.Mode, Type: r.Type}
	if q.f.Type != "" && r.Type != q.f.Type || r.Mode == "data" && !q.scan.Data {
		return hit, false
	}
	if q.pattern != nil {
		p, err := reserve.ParseKey(r.InstanceID)
		if err != nil || !q.pattern.Covers(p) {
			return hit, false
		}
	}
	if q.f.State != "" && !globMatch(q.f.State, r.State) {
		_, _, bare, ok := tenancy.SplitTenantStateName(r.State)
		if !ok || !globMatch(q.f.State, bare) {
			return hit, false
		}
	}
	if len(q.attrs) == 0 && q.text == "" {
		return hit, true
	}
	attrs, ok := maskedAttributes(r.Object)
	if !ok {
		return hit, false
	}
	var paths []string
	for _, a := range q.attrs {
		v, found := at(attrs, a.path)
		if !found || !scalarIs(v, a.value) {
			return hit, false
		}
		paths = append(paths, strings.Join(a.path, "."))
	}
	if q.text != "" {
		var found []string
		textPaths(attrs, q.text, nil, &found)
		if len(found) == 0 {
			return hit, false
		}
		paths = append(paths, found...)
	}
	hit.Paths = dedupe(paths)
	return hit, true
}

// maskedAttributes decodes the attributes of an instance object, with its
// sensitive values masked.
func maskedAttributes(obj []byte) (any, bool) {
	return attributes(masked(obj))
}

// masked is an instance object with its sensitive values masked: obj
// itself when it marks none.
func masked(obj []byte) []byte {
	if m, sensitive := graph.MaskedInstanceObject(obj); sensitive {
		return m
	}
	return obj
}

// attributes decodes the attributes of a masked instance object.
func attributes(obj []byte) (any, bool) {
	var o struct {
		Attributes json.RawMessage `json:"attributes"`
	}
	if err := json.Unmarshal(obj, &o); err != nil || o.Attributes == nil {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(o.Attributes))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// at is the value at path in v.
func at(v any, path []string) (any, bool) {
	for _, step := range path {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[step]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// scalar is a leaf as a filter's value spells it; ok is false for
// objects, arrays, null and masked values.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, x != graph.SensitiveMask
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

func scalarIs(v any, want string) bool {
	s, ok := scalar(v)
	return ok && s == want
}

// textPaths appends the paths under v whose key or scalar value holds
// text (lowercase).
func textPaths(v any, text string, path []string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p := append(path[:len(path):len(path)], k)
			if strings.Contains(strings.ToLower(k), text) {
				*out = append(*out, strings.Join(p, "."))
				continue
			}
			textPaths(x[k], text, p, out)
		}
	case []any:
		for i, e := range x {
			textPaths(e, text, append(path[:len(path):len(path)], strconv.Itoa(i)), out)
		}
	default:
		if s, ok := scalar(v); ok && len(path) > 0 && strings.Contains(strings.ToLower(s), text) {
			*out = append(*out, strings.Join(path, "."))
		}
	}
}

func dedupe(paths []string) []string {
	seen := map[string]bool{}
	out := paths[:0]
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
