package webui

import (
	"cmp"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/history"
)

// historyPage is how many versions one page of the timeline shows.
const historyPage = 50

// event is one entry of a state's timeline: a version, or a rejected
// commit.
type event struct {
	At        time.Time
	Version   *kilolock.Version
	Rejection *kilolock.Rejection
	Tags      []string
	Move      *moveNote // the version is one side of a move between states
}

// moveNote names the other side of a move between states: Count
// instances went to (Out) or came from Other, whose version is Version.
type moveNote struct {
	Count   int
	Out     bool
	Other   string
	Version int64
}

// historyData is the timeline page.
type historyData struct {
	Name, Label string
	Info        *kilolock.State
	Events      []event
	// Older is the ?before= of the next page; 0 when this is the last.
	Older    int64
	ShowTags bool
	// Overview is set on the first page, which shows what the state
	// holds and what is happening to it above the timeline.
	Overview bool
	// Contents are the current version's instances by module and type;
	// Outputs its outputs.
	Contents []moduleNode
	Outputs  []outputRow
	// InFlight are the locks held on the state and its apply runs in
	// flight.
	InFlight inFlight
	// Drift are the open drift records (ShowDrift: the server keeps
	// them); Tags the tags, newest version first.
	ShowDrift bool
	Drift     []drift.DriftRecord
	Tags      []tagRow
	// Activity are the newest events of the timeline.
	Activity []event
}

// tagRow is a tag of the state and the version it names.
type tagRow struct {
	Name    string
	Version int64
}

// activityListed is how many events the state page's recent activity
// shows.
const activityListed = 5

// history serves GET /ui/states/{name}: the state's versions newest first
// (source, actor, lock, merges with the serial they read, rollbacks) with
// its rejected commits among them.
func (u *UI) history(w http.ResponseWriter, r *http.Request, v *visit) (*view, error) {
	name := r.PathValue("name")
	if err := u.readable(r, v, name); err != nil {
		return nil, err
	}
	var before int64
	if s := r.URL.Query().Get("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return nil, badParam("before", strconv.Quote(s)+" is not a version number", "page with ?before=N, N a version number of at least 1")
		}
		before = n
	}
	ctx := r.Context()
	st, err := u.engine.Store().State(ctx, name)
	if err != nil {
		return nil, err
	}
	vs, err := u.engine.History(ctx, name, kilolock.HistoryOptions{Limit: historyPage, Before: before})
	if err != nil {
		return nil, err
	}
	d := historyData{Name: name, Label: v.label(name), Info: st, Overview: before == 0}
	if d.Overview {
		if err := u.overview(r, v, &d); err != nil {
			return nil, err
		}
	}
	var tags map[int64][]string
	if f := u.o.Extras.Tags; f != nil {
		if tags, err = f(ctx, name); err != nil {
			return nil, err
		}
		d.ShowTags = true
		if d.Overview {
			d.Tags = tagRows(tags)
		}
	}
	moves, err := u.moveNotes(r, name, vs)
	if err != nil {
		return nil, err
	}
	for i := range vs {
		d.Events = append(d.Events, event{At: vs[i].Created, Version: &vs[i], Tags: tags[vs[i].Number], Move: moves[vs[i].Number]})
	}
	if n := len(vs); n == historyPage && vs[n-1].Number > 1 {
		d.Older = vs[n-1].Number
	}
	rejs, err := history.Rejections(ctx, u.engine, name, historyPage)
	if err != nil {
		return nil, err
	}
	// Rejections fall between the versions of this page: newer than the
	// oldest shown (unless this is the last page) and older than the page's
	// newest unless it is the first.
	for i := range rejs {
		at := rejs[i].Created
		if d.Older != 0 && len(vs) > 0 && at.Before(vs[len(vs)-1].Created) {
			continue
		}
		if before != 0 && len(vs) > 0 && at.After(vs[0].Created) {
			continue
		}
		d.Events = append(d.Events, event{At: at, Rejection: &rejs[i]})
	}
	sort.SliceStable(d.Events, func(i, j int) bool { return d.Events[i].At.After(d.Events[j].At) })
	if d.Overview {
		d.Activity = d.Events[:min(activityListed, len(d.Events))]
	}
	return &view{Template: "history", Title: d.Label, Crumbs: []crumb{{Label: d.Label}}, Data: d}, nil
}

// tagRows lists tags by version number, newest version first.
func tagRows(tags map[int64][]string) []tagRow {
	var out []tagRow
	for n, names := range tags {
		for _, t := range names {
			out = append(out, tagRow{Name: t, Version: n})
		}
	}
	slices.SortFunc(out, func(a, b tagRow) int {
		return cmp.Or(cmp.Compare(b.Version, a.Version), strings.Compare(a.Name, b.Name))
	})
	return out
}

// overview reads what the state page shows above the timeline: the
// current version's contents and outputs, the locks and apply runs in
// flight, and the open drift records.
func (u *UI) overview(r *http.Request, v *visit, d *historyData) error {
	ctx := r.Context()
	g, err := u.currentGraph(ctx, d.Name)
	if err != nil {
		return err
	}
	if g != nil {
		d.Contents, d.Outputs = contents(g), outputs(g)
	}
	if d.InFlight, err = u.inFlight(r, v, []kilolock.State{*d.Info}, d.Name, u.now()); err != nil {
		return err
	}
	if f := u.o.Extras.Drift; f != nil {
		if d.Drift, err = f(ctx, d.Name); err != nil {
			return err
		}
		d.ShowDrift = true
	}
	return nil
}

// moveNotes reads, when vs holds a version of a move between states, each
// move's other side, by the version of name it made.
func (u *UI) moveNotes(r *http.Request, name string, vs []kilolock.Version) (map[int64]*moveNote, error) {
	ms, ok := u.engine.Store().(history.MoveStore)
	if !ok || !slices.ContainsFunc(vs, func(v kilolock.Version) bool { return v.Source == kilolock.SourceMove }) {
		return nil, nil
	}
	recs, err := ms.Moves(r.Context(), name)
	if err != nil {
		return nil, err
	}
	notes := map[int64]*moveNote{}
	for _, m := range recs {
		if m.From == name {
			notes[m.FromVersion] = &moveNote{Count: m.Instances, Out: true, Other: m.To, Version: m.ToVersion}
		}
		if m.To == name {
			notes[m.ToVersion] = &moveNote{Count: m.Instances, Other: m.From, Version: m.FromVersion}
		}
	}
	return notes, nil
}
