package inventory

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The API's wire: a search (client.Search) takes Filters as query
// parameters (Values, FiltersOf) and answers a Page; duplicates
// (client.Duplicates) takes type and answers a DuplicateList.

// DuplicateList is the answer of the duplicates route (client.Duplicates).
type DuplicateList struct {
	Duplicates []Duplicate `json:"duplicates"`
}

// Params are the query parameters of a search, each the Filters field of
// its name; attr may repeat.
var Params = []string{"type", "address", "attr", "text", "state", "limit", "cursor", "data"}

// Values are f as query parameters.
func (f Filters) Values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("type", f.Type)
	set("address", f.Address)
	set("text", f.Text)
	set("state", f.State)
	set("cursor", f.Cursor)
	if f.Limit != 0 {
		v.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Data {
		v.Set("data", "true")
	}
	for _, a := range f.Attr {
		v.Add("attr", a)
	}
	return v
}

// FiltersOf reads Filters from query parameters: an unknown or repeated
// parameter, or a value of the wrong kind, is a *kilolock.InvalidError
// saying which (ParseQuery checks the rest).
func FiltersOf(q url.Values) (Filters, error) {
	var f Filters
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, name := range keys {
		vs := q[name]
		if !slices.Contains(Params, name) {
			return f, invalid("invalid_parameter", fmt.Sprintf("unknown search parameter %q", name), "search with "+strings.Join(Params, ", ")+" (attr may repeat)")
		}
		if name != "attr" && len(vs) > 1 {
			return f, invalid("invalid_parameter", fmt.Sprintf("search parameter %q is given %d times", name, len(vs)), "give it once; only attr may repeat, and every PATH=VALUE must hold")
		}
		v := vs[0]
		switch name {
		case "type":
			f.Type = v
		case "address":
			f.Address = v
		case "attr":
			f.Attr = vs
		case "text":
			f.Text = v
		case "state":
			f.State = v
		case "cursor":
			f.Cursor = v
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil {
				return f, invalid("invalid_limit", fmt.Sprintf("limit %q is not a whole number", v), fmt.Sprintf("give a limit from 1 to %d", MaxLimit))
			}
			f.Limit = n
		case "data":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return f, invalid("invalid_parameter", fmt.Sprintf("data %q is not true or false", v), "data=true finds data sources too")
			}
			f.Data = b
		}
	}
	return f, nil
}
