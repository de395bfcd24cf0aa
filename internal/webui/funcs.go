package webui

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"
)

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"when":        when,
	"short":       short,
	"value":       jsonValue,
	"join":        strings.Join,
	"add":         func(a, b int) int { return a + b },
	"add64":       func(a, b int64) int64 { return a + b },
	"stateURL":    stateURL,
	"instanceURL": instanceURL,
	"graphURL":    graphURL,
}

// stateURL is the timeline page of the state kept as name.
func stateURL(name string) string { return Prefix + "states/" + url.PathEscape(name) }

// instanceURL is the page of the instance or resource address of the
// state kept as name. Every link to an instance is made here, whole: a
// template that appended an escaped address to "?address=" had it escaped
// again by html/template (web%5B0%5D became web%255B0%255D, a 404), while
// a whole URL is only normalized, which keeps its escapes.
func instanceURL(name, address string) string {
	return stateURL(name) + "/instance?address=" + url.QueryEscape(address)
}

// graphURL is the cone page of address in the state kept as name, drawn
// in direction ("" for dependencies), made whole as instanceURL is.
func graphURL(name, address, direction string) string {
	u := stateURL(name) + "/graph?address=" + url.QueryEscape(address)
	if direction != "" {
		u += "&direction=" + url.QueryEscape(direction)
	}
	return u
}

// when shows a time in UTC to the second.
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// short cuts a long text (a lock id) to n characters.
func short(n int, s string) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// jsonValue shows an attribute value as JSON; the engine's masked values
// encode as "(sensitive)", so masking is the engine's, never the page's.
func jsonValue(v any) string {
	if v == nil {
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
