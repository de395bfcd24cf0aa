package kilolock

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// VersionRefKind says how a VersionRef picks a version.
type VersionRefKind uint8

// Kinds of version references.
const (
	RefLatest   VersionRefKind = iota // @latest: the current version
	RefNumber                         // @N: the Nth version, @1 the first
	RefRelative                       // @-K: K versions before the current one
	RefSerial                         // serial:S: the newest version with Terraform serial S
	RefTag                            // NAME: the version a tag names (see ValidTagName)
)

// VersionRef names a version of a state: "@N", "@latest", "@-K",
// "serial:S" or a tag's name. The zero value is @latest.
type VersionRef struct {
	Kind VersionRefKind
	// N is the version number (RefNumber), the distance back from the
	// current version (RefRelative) or the serial (RefSerial).
	N uint64
	// Tag is the tag's name (RefTag).
	Tag string
}

// Latest is the reference to a state's current version.
var Latest = VersionRef{Kind: RefLatest}

// ParseVersionRef parses "@N" (N >= 1), "@latest", "@-K" (K >= 1),
// "serial:S" or a tag name (ValidTagName). Anything else is an
// *InvalidError.
func ParseVersionRef(s string) (VersionRef, error) {
	bad := func(why string) (VersionRef, error) {
		return VersionRef{}, &InvalidError{
			Code:    "invalid_version_ref",
			Message: fmt.Sprintf("%q is not a version reference: %s", s, why),
			Hint:    "use @N for the Nth version (@1 is the first), @latest, @-1 for the one before the current, serial:S, or a tag's name (kl tag list NAME)",
		}
	}
	switch {
	case s == "@latest":
		return Latest, nil
	case strings.HasPrefix(s, "serial:"):
		n, err := strconv.ParseUint(s[len("serial:"):], 10, 63)
		if err != nil {
			return bad("the serial is not a number")
		}
		return VersionRef{Kind: RefSerial, N: n}, nil
	case strings.HasPrefix(s, "@-"):
		n, err := strconv.ParseUint(s[2:], 10, 63)
		if err != nil || n == 0 {
			return bad("@-K needs a whole number K of at least 1")
		}
		return VersionRef{Kind: RefRelative, N: n}, nil
	case strings.HasPrefix(s, "@"):
		n, err := strconv.ParseUint(s[1:], 10, 63)
		if err != nil || n == 0 {
			return bad("@N needs a whole number N of at least 1 (@1 is the first version)")
		}
		return VersionRef{Kind: RefNumber, N: n}, nil
	}
	if err := ValidTagName(s); err != nil {
		if strings.EqualFold(s, "latest") {
			return bad("the current version is @latest")
		}
		return bad("it must start with @ or serial:, or be a tag's name")
	}
	return VersionRef{Kind: RefTag, Tag: s}, nil
}

// String returns the reference as ParseVersionRef reads it.
func (r VersionRef) String() string {
	switch r.Kind {
	case RefNumber:
		return "@" + strconv.FormatUint(r.N, 10)
	case RefRelative:
		return "@-" + strconv.FormatUint(r.N, 10)
	case RefSerial:
		return "serial:" + strconv.FormatUint(r.N, 10)
	case RefTag:
		return r.Tag
	}
	return "@latest"
}

// MarshalText encodes the reference as its String.
func (r VersionRef) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText parses the reference with ParseVersionRef.
func (r *VersionRef) UnmarshalText(b []byte) error {
	v, err := ParseVersionRef(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// VersionNotFoundError is a reference to a version a state does not have.
// It matches ErrNotFound, and its message lists the valid range.
type VersionNotFoundError struct {
	State string
	Ref   VersionRef
	// Latest is the current version number (0 for a state without
	// versions); FirstSerial and LatestSerial are the serials of @1 and of
	// the current version.
	Latest       int64
	FirstSerial  uint64
	LatestSerial uint64
	// First is the oldest version the state has: 1 unless retention
	// pruned the first ones.
	First int64
	// Pruned is the run of pruned versions the reference falls in, nil
	// when it names no pruned version.
	Pruned *PrunedRange
	// Nearest are the versions still kept nearest to a pruned reference:
	// the newest before its run and the oldest after it, where there are.
	Nearest []int64
	// Kept are the runs of versions the state still has, "@2, @6…@9",
	// when retention pruned some between its first and its latest.
	Kept string
}

func (e *VersionNotFoundError) Error() string {
	if e.Ref.Kind == RefTag {
		return fmt.Sprintf("state %s has no tag %q (kl tag list %s shows its tags)", e.State, e.Ref.Tag, e.State)
	}
	if e.Latest == 0 {
		return fmt.Sprintf("state %s has no version %s: it has no versions yet", e.State, e.Ref)
	}
	first := max(e.First, 1)
	has := fmt.Sprintf("it has versions @%d…@%d (serials %d…%d)", first, e.Latest, e.FirstSerial, e.LatestSerial)
	if e.Kept != "" {
		has = fmt.Sprintf("it has versions %s (serials %d…%d)", e.Kept, e.FirstSerial, e.LatestSerial)
	}
	if p := e.Pruned; p != nil {
		near := ""
		if len(e.Nearest) > 0 {
			refs := make([]string, len(e.Nearest))
			for i, n := range e.Nearest {
				refs[i] = fmt.Sprintf("@%d", n)
			}
			near = "; the nearest kept are " + strings.Join(refs, " and ")
		}
		return fmt.Sprintf("state %s has no version %s: retention pruned @%d…@%d (by %s at %s, policy %s)%s; %s", e.State, e.Ref,
			p.From, p.To, p.PrunedBy, p.PrunedAt.UTC().Format(time.RFC3339), p.Policy, near, has)
	}
	return fmt.Sprintf("state %s has no version %s: %s", e.State, e.Ref, has)
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *VersionNotFoundError) Is(target error) bool { return target == ErrNotFound }

// ResolveVersion returns the record of the version ref names, with index
// lookups only. ErrNotFound when the state does not exist; a
// *VersionNotFoundError (matching ErrNotFound) listing the valid range when
// the version does not.
func (e *Engine) ResolveVersion(ctx context.Context, name string, ref VersionRef) (*Version, error) {
	if err := ValidStateName(name); err != nil {
		return nil, err
	}
	st, err := e.store.State(ctx, name)
	if err != nil {
		return nil, err
	}
	return e.Resolve(ctx, st, ref)
}

// Resolve returns the version ref names in st, as ResolveVersion does by
// name.
func (e *Engine) Resolve(ctx context.Context, st *State, ref VersionRef) (*Version, error) {
	var number int64
	switch ref.Kind {
	case RefLatest:
		number = st.Current
	case RefNumber:
		if ref.N <= uint64(st.Current) {
			number = int64(ref.N)
		}
	case RefRelative:
		if ref.N < uint64(st.Current) {
			number = st.Current - int64(ref.N)
		}
	case RefSerial:
		v, err := e.store.VersionBySerial(ctx, st.Name, ref.N)
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	case RefTag:
		ts, ok := e.store.(TagResolver)
		if !ok {
			return nil, &InvalidError{Code: "tags_unsupported", Message: "this store keeps no tags", Hint: "use the SQLite or PostgreSQL store"}
		}
		n, err := ts.TagVersion(ctx, st.Name, ref.Tag)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		number = n
	}
	if number > 0 {
		if v, err := e.versionRecord(ctx, st.Name, number); !errors.Is(err, ErrNotFound) {
			return v, err
		}
	}
	nf := &VersionNotFoundError{State: st.Name, Ref: ref, Latest: st.Current, LatestSerial: st.Serial, First: 1}
	if st.Current == 0 {
		return nil, nf
	}
	var pruned []PrunedRange
	if pl, ok := e.store.(PruneLister); ok {
		var err error
		if pruned, err = pl.PrunedVersions(ctx, st.Name, 0, 1000); err != nil {
			return nil, err
		}
	}
	for i := len(pruned) - 1; i >= 0; i-- { // oldest first
		p := &pruned[i]
		if p.From == nf.First {
			nf.First = p.To + 1
		}
		if number >= p.From && number <= p.To {
			nf.Pruned = p
		}
	}
	nf.Nearest, nf.Kept = keptAround(pruned, nf.Pruned, nf.First, st.Current)
	first, err := e.versionRecord(ctx, st.Name, nf.First)
	if err != nil {
		return nil, err
	}
	nf.FirstSerial = first.Serial
	return nil, nf
}

// maxKeptRuns bounds the runs of kept versions an error lists.
const maxKeptRuns = 6

// keptAround reads, from the runs of pruned versions of a state (newest
// first) whose versions are first…latest: the kept versions nearest to
// run in (nil when in is nil), and the runs of kept versions when pruned
// runs lie among them ("" when none do).
func keptAround(pruned []PrunedRange, in *PrunedRange, first, latest int64) (nearest []int64, kept string) {
	endsAt, startsAt := map[int64]int64{}, map[int64]int64{}
	for _, p := range pruned {
		endsAt[p.To], startsAt[p.From] = p.From, p.To
	}
	if in != nil {
		below := in.From - 1
		for from, ok := endsAt[below]; ok; from, ok = endsAt[below] {
			below = from - 1
		}
		above := in.To + 1
		for to, ok := startsAt[above]; ok; to, ok = startsAt[above] {
			above = to + 1
		}
		if below >= first {
			nearest = append(nearest, below)
		}
		if above <= latest {
			nearest = append(nearest, above)
		}
	}
	var runs []string
	gaps := false
	for n := first; n <= latest; {
		end := n
		for end < latest {
			if _, ok := startsAt[end+1]; ok {
				gaps = true
				break
			}
			end++
		}
		if end > n {
			runs = append(runs, fmt.Sprintf("@%d…@%d", n, end))
		} else {
			runs = append(runs, fmt.Sprintf("@%d", n))
		}
		n = end + 1
		for to, ok := startsAt[n]; ok; to, ok = startsAt[n] {
			n = to + 1
		}
	}
	if !gaps {
		return nearest, ""
	}
	if len(runs) > maxKeptRuns {
		runs = append(append(runs[:maxKeptRuns/2:maxKeptRuns/2], "…"), runs[len(runs)-maxKeptRuns/2:]...)
	}
	return nearest, strings.Join(runs, ", ")
}

// versionRecord returns version number of a state: one probe of the
// (state, number) index.
func (e *Engine) versionRecord(ctx context.Context, name string, number int64) (*Version, error) {
	vs, err := e.store.History(ctx, name, HistoryOptions{Limit: 1, Before: number + 1})
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 || vs[0].Number != number {
		return nil, fmt.Errorf("state %q has no version %d: %w", name, number, ErrNotFound)
	}
	return &vs[0], nil
}

// MaxTagLength bounds a tag name (see ValidTagName).
const MaxTagLength = 128

var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

// ValidTagName checks a tag name: 1 to MaxTagLength letters, digits, '.',
// '-' and '_', not starting with '.' or '-', and nothing that reads as
// another kind of version reference: not "latest", no "@N" or
// "serial:S", and not a bare number. An *InvalidError (invalid_tag)
// otherwise.
func ValidTagName(name string) error {
	bad := func(why, hint string) error {
		return &InvalidError{Code: "invalid_tag", Message: fmt.Sprintf("%s is not a tag name: %s", Clip(name), why), Hint: hint}
	}
	const hint = "name a tag in 1 to 128 letters, digits, '.', '-' and '_', e.g. pre-migration or release-2026.11"
	switch {
	case name == "":
		return bad("it is empty", hint)
	case strings.HasPrefix(name, "@"), strings.HasPrefix(strings.ToLower(name), "serial:"):
		return bad("it reads as a version reference (@N, @latest, @-K, serial:S)", hint)
	case strings.EqualFold(name, "latest"):
		return bad("latest names the current version", "use @latest for the current version, and another name for the tag")
	case strings.Trim(name, "0123456789") == "":
		return bad("a bare number reads as a version number", "use @"+name+" for version "+name+", and a name with a letter for the tag")
	case len(name) > MaxTagLength:
		return bad(fmt.Sprintf("it is longer than %d bytes", MaxTagLength), hint)
	case !tagRE.MatchString(name):
		return bad("it holds a character other than letters, digits, '.', '-' and '_', or starts with '.' or '-'", hint)
	}
	return nil
}

// PrunedRange is a run of consecutive pruned versions of a state, pruned
// by the same actor under the same policy: the marker history shows
// where they were.
type PrunedRange struct {
	From     int64     `json:"from"`
	To       int64     `json:"to"`
	Versions int64     `json:"versions"`
	PrunedAt time.Time `json:"pruned_at"` // the last of them
	PrunedBy string    `json:"pruned_by"`
	Policy   string    `json:"policy"`
}

// String is the run's versions: "@3-@9", or "@3" alone.
func (p PrunedRange) String() string {
	if p.To > p.From {
		return fmt.Sprintf("@%d-@%d", p.From, p.To)
	}
	return fmt.Sprintf("@%d", p.From)
}
