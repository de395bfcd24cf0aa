// Package sqlstore holds what the SQL stores (store/sqlite and
// store/postgres) share, written once: today the answer of a user's query
// within its kilolock.QueryLimits.
package sqlstore
