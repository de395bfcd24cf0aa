// Package webui is kld's read-only web view of states and their history,
// served under /ui/: the states, one state's timeline (versions, merges,
// rollbacks, rejected commits), a diff between two versions with
// sensitive values masked, resource search, one instance's history, its
// dependency cone drawn as SVG, and the locks and apply runs in flight.
//
// Pages are rendered on the server from embedded templates and assets
// (nothing is fetched from the internet), so they work without
// JavaScript; the in-flight page refreshes itself (a small script, or a
// meta refresh without one).
//
// Who sees what is decided by a Gate: httpbackend passes the
// authenticated lane's own decision, so a token sees in the browser
// exactly the states it reaches with tofu. Without a Gate every local
// state is shown.
//
//	ui := webui.New(engine, webui.Options{Describe: describe})
//	ui.Routes(mux.HandleFunc)
package webui
