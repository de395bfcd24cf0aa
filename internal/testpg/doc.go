// Package testpg gives tests a fresh, empty PostgreSQL database.
//
//	func TestMain(m *testing.M) { testpg.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		url := testpg.URL(t) // a new database, dropped when t ends
//		...
//	}
//
// # Where the databases live
//
// When KL_TEST_DATABASE_URL is set, each URL call creates a database
// (kl_test_PID_N) on that server, or, when its role may not create
// databases, a schema of that name put first on the search path.
//
// Otherwise the first URL call starts one throwaway cluster for the whole
// test binary: initdb (run as the "postgres" user when the tests run as
// root, since initdb refuses root) into a directory under os.TempDir, trust
// authentication, a Unix socket in that directory and no TCP listener,
// fsync and synchronous_commit off. Main stops it and removes the directory
// when the tests end or on SIGINT/SIGTERM; a cluster left behind by a test
// binary that died (a panic, a timeout) is reaped by the next one. Starting
// the cluster requires Main, so that it is stopped.
//
// initdb and pg_ctl are looked for in $KL_TEST_PG_BINDIR when it is set,
// else on PATH and in the usual install directories
// (/usr/lib/postgresql/*/bin, newest first). When they cannot be found the
// test is skipped, unless CI=true: in CI a missing PostgreSQL fails the
// test, never skips it. Failures to start quote the end of the server log.
package testpg
