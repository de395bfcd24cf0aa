package kilolock

import "context"

// maxStatusRuns bounds the runs a status shows.
const maxStatusRuns = 100

// inFlightRuns returns a state's runs in flight for Status: an empty list
// on a store that keeps no runs.
func (e *Engine) inFlightRuns(ctx context.Context, name string) ([]ApplyRun, error) {
	rs, ok := e.store.(RunStore)
	if !ok {
		return []ApplyRun{}, nil
	}
	runs, err := rs.Runs(ctx, RunFilter{State: name, InFlight: true, Limit: maxStatusRuns}, e.now().UTC())
	if err != nil {
		return nil, err
	}
	if runs == nil {
		runs = []ApplyRun{}
	}
	return runs, nil
}
