package klcli_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/history"
)

// The store stamps versions and locks with the real time. Golden output
// needs fixed times, so tests see them through stableTimes, which replaces
// them with times derived from testBase, and use testNow as the clock.
var (
	testBase = time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	testNow  = testBase.Add(2 * time.Hour)
)

// stableTimes is a transport whose answers carry fixed times: a state was
// created at testBase, version N at testBase + N minutes, lock i (in
// holder order) was acquired at testBase + 1h + i×5m, and rejection ID at
// testBase + 90m + ID minutes. It rewrites the answers of the routes that
// carry them, decoded into and encoded from their client wire types.
type stableTimes struct{ next http.RoundTripper }

func versionTime(n int64) time.Time { return testBase.Add(time.Duration(n) * time.Minute) }

// rejectionTime is when rejection id was recorded, as tests see it.
func rejectionTime(id int64) time.Time {
	return testBase.Add(90*time.Minute + time.Duration(id)*time.Minute)
}

func stableState(s *kilolock.State) {
	s.Created = testBase
	for i := range s.Locks {
		s.Locks[i].Acquired = testBase.Add(time.Hour + time.Duration(i)*5*time.Minute)
		s.Locks[i].Info.Created = s.Locks[i].Acquired
	}
}

// RoundTrip implements http.RoundTripper.
func (t stableTimes) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK || req.Method != http.MethodGet {
		return resp, err
	}
	// /v1/api/states[/NAME[/what…]]
	parts := strings.Split(strings.TrimPrefix(req.URL.EscapedPath(), "/v1/api/states"), "/")
	switch what := strings.Join(parts[min(2, len(parts)):], "/"); {
	case len(parts) == 1 && parts[0] == "":
		return rewrite(resp, func(l *client.StateList) {
			for i := range l.States {
				stableState(&l.States[i])
			}
		})
	case !strings.HasPrefix(req.URL.Path, "/v1/api/states/"):
	case len(parts) == 2:
		return rewrite(resp, func(s *kilolock.Status) {
			stableState(&s.State)
			if s.Version != nil {
				s.Version.Created = versionTime(s.Version.Number)
			}
		})
	case what == "versions":
		return rewrite(resp, func(l *client.VersionList) {
			for i := range l.Versions {
				l.Versions[i].Created = versionTime(l.Versions[i].Number)
			}
		})
	case what == "rejections":
		return rewrite(resp, func(l *client.RejectionList) {
			for i := range l.Rejections {
				l.Rejections[i].Created = rejectionTime(l.Rejections[i].ID)
			}
		})
	case what == "address-history":
		return rewrite(resp, func(l *client.AddressChanges) {
			for i := range l.Changes {
				l.Changes[i].Version.Created = versionTime(l.Changes[i].Version.Number)
			}
		})
	case strings.HasPrefix(what, "versions/") && strings.HasSuffix(what, "/summary"):
		return rewrite(resp, func(v *history.VersionView) { v.Version.Created = versionTime(v.Version.Number) })
	}
	return resp, nil
}

// rewrite decodes resp's JSON body as a T, changes it with f and puts it
// back.
func rewrite[T any](resp *http.Response, f func(*T)) (*http.Response, error) {
	defer resp.Body.Close()
	var v T
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return nil, err
	}
	f(&v)
	b, err := json.Marshal(&v)
	if err != nil {
		return nil, err
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	return resp, nil
}
