package klcli_test

import (
	"context"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/klcli"
)

// The store stamps versions and locks with the real time. Golden output
// needs fixed times, so tests see them through stableTimes, which replaces
// them with times derived from testBase, and use testNow as the clock.
var (
	testBase = time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	testNow  = testBase.Add(2 * time.Hour)
)

// stableTimes is a Backend whose answers carry fixed times: a state was
// created at testBase, version N at testBase + N minutes, and lock i (in
// holder order) was acquired at testBase + 1h + i×5m.
type stableTimes struct{ klcli.Backend }

func versionTime(n int64) time.Time { return testBase.Add(time.Duration(n) * time.Minute) }

func stableState(s *kilolock.State) {
	s.Created = testBase
	for i := range s.Locks {
		s.Locks[i].Acquired = testBase.Add(time.Hour + time.Duration(i)*5*time.Minute)
		s.Locks[i].Info.Created = s.Locks[i].Acquired
	}
}

func (b stableTimes) Status(ctx context.Context, name string) (*kilolock.Status, error) {
	s, err := b.Backend.Status(ctx, name)
	if err != nil {
		return nil, err
	}
	stableState(&s.State)
	if s.Version != nil {
		s.Version.Created = versionTime(s.Version.Number)
	}
	return s, nil
}

func (b stableTimes) History(ctx context.Context, name string, opts kilolock.HistoryOptions) ([]kilolock.Version, error) {
	vs, err := b.Backend.History(ctx, name, opts)
	for i := range vs {
		vs[i].Created = versionTime(vs[i].Number)
	}
	return vs, err
}

func (b stableTimes) States(ctx context.Context) ([]kilolock.State, error) {
	sts, err := b.Backend.States(ctx)
	for i := range sts {
		stableState(&sts[i])
	}
	return sts, err
}

// rejectionTime is when rejection id was recorded, as tests see it.
func rejectionTime(id int64) time.Time {
	return testBase.Add(90*time.Minute + time.Duration(id)*time.Minute)
}

func (b stableTimes) Rejections(ctx context.Context, name string, limit int) ([]kilolock.Rejection, error) {
	rs, err := b.Backend.Rejections(ctx, name, limit)
	for i := range rs {
		rs[i].Created = rejectionTime(rs[i].ID)
	}
	return rs, err
}

func (b stableTimes) AddressHistory(ctx context.Context, name, address string) ([]history.AddressChange, error) {
	cs, err := b.Backend.AddressHistory(ctx, name, address)
	for i := range cs {
		cs[i].Version.Created = versionTime(cs[i].Version.Number)
	}
	return cs, err
}

func (b stableTimes) Show(ctx context.Context, name string, ref kilolock.VersionRef) (*history.VersionView, error) {
	v, err := b.Backend.Show(ctx, name, ref)
	if v != nil {
		v.Version.Created = versionTime(v.Version.Number)
	}
	return v, err
}
