package prommetrics

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Under AuthToken, a state's name is a tenant's (its workspace, its
// environment, its own name), so /metrics names none to a scrape without
// credentials: the series by state (stateFamilies) are summed into one
// series without labels, beside kl_drifted_states, how many states have
// any. The operator's token (Authorization: Bearer klo_…, which
// Prometheus sends with authorization.credentials) reads them by state,
// as every scrape does under AuthNone, where every state is anyone's.
// Aggregates rather than a refusal, so that a scraper without the token
// still sees kld's health and the sum it alerts on; any other credentials
// get 401, so that a scraper given a wrong token learns of it.

// stateFamilies are the families whose series are by state, with the help
// of their sum.
var stateFamilies = map[string]string{
	"kl_drifted_instances": "Instances whose open drift record says they differ from the real infrastructure (kl drift check), summed over all states (the operator's token reads them by state).",
	"kl_duplicate_objects": "Managed objects that another state records too (kl search --duplicates), summed over all states: each object counts once per state recording it (the operator's token reads them by state).",
}

// driftedStatesHelp is the help of the anonymous kl_drifted_states.
const driftedStatesHelp = "States with at least one instance in kl_drifted_instances (the operator's token reads them by state)."

// anonymousGatherer is g with stateFamilies summed.
type anonymousGatherer struct{ g prometheus.Gatherer }

func (a anonymousGatherer) Gather() ([]*dto.MetricFamily, error) {
	families, err := a.g.Gather()
	for _, f := range families {
		help, ok := stateFamilies[f.GetName()]
		if !ok {
			continue
		}
		var sum, states float64
		for _, m := range f.Metric {
			v := m.GetGauge().GetValue()
			sum += v
			if v > 0 {
				states++
			}
		}
		f.Help = &help
		f.Metric = []*dto.Metric{{Gauge: &dto.Gauge{Value: &sum}}}
		if f.GetName() == "kl_drifted_instances" {
			families = append(families, &dto.MetricFamily{Name: ptr("kl_drifted_states"), Help: ptr(driftedStatesHelp),
				Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: &states}}}})
		}
	}
	slices.SortFunc(families, func(x, y *dto.MetricFamily) int { return strings.Compare(x.GetName(), y.GetName()) })
	return families, err
}

func ptr[T any](v T) *T { return &v }
