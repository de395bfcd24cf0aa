package httpbackend

import "net/http"

// metricsFor is the handler of /metrics for r: by state for the operator
// token, or for anyone under AuthNone; summed for a request without
// credentials under AuthToken; a 401 for other credentials.
func (h *Handler) metricsFor(r *http.Request) (http.Handler, error) {
	if h.auth != AuthToken {
		return h.metricsHandler, nil
	}
	if _, secret := credentials(r); secret == "" {
		return h.metricsSummed, nil
	}
	if err := h.authorizeOperator(r); err != nil {
		return nil, denial(http.StatusUnauthorized, "credentials_invalid", "/metrics reads series by state with the operator token only",
			"scrape without credentials for the series summed over states, or with Authorization: Bearer klo_… (kld --operator-token) for them by state")
	}
	info(r).actor = "operator"
	return h.metricsHandler, nil
}
