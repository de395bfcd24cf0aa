// Package e2e holds the end-to-end tests: the real OpenTofu CLI against a
// real kld, on SQLite and on PostgreSQL, with the backend block a user
// writes. They need tofu (make tofu) and PostgreSQL (initdb and pg_ctl, or
// KL_TEST_DATABASE_URL); without them they skip, unless CI=true.
//
//	make tofu && go test ./internal/e2e -v
package e2e
