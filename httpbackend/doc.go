// Package httpbackend serves a kilolock.Engine over HTTP: the Terraform and
// OpenTofu HTTP backend protocol, the JSON API that kl uses, and the health,
// version and metrics endpoints. It is one http.Handler; embed it in any Go
// server:
//
//	st, err := store.Open(ctx, "./kilolock.db")
//	if err != nil { … }
//	engine := kilolock.NewEngine(st, kilolock.Options{Logger: logger})
//	http.ListenAndServe("127.0.0.1:8080", httpbackend.New(engine, httpbackend.Options{Logger: logger}))
//
// and point Terraform or OpenTofu at it:
//
//	terraform {
//	  backend "http" {
//	    address        = "http://127.0.0.1:8080/v1/states/prod"
//	    lock_address   = "http://127.0.0.1:8080/v1/states/prod"
//	    unlock_address = "http://127.0.0.1:8080/v1/states/prod"
//	  }
//	}
//
// # Routes
//
// The backend protocol, on /v1/states/{name}:
//
//	GET     the current version's bytes, as the client last wrote them
//	        (gzip when accepted and ready); 404 before the first write,
//	        which both CLIs read as an empty state. ETag, X-Kilolock-Version
//	        and X-Kilolock-Serial name the version.
//	POST    (or PUT) ?ID=<lock id>: store the body as a new version.
//	        Content-MD5 is verified when sent. 423 with the holder's LockInfo
//	        when someone else holds the lock and no ID is given; 409 for a
//	        wrong lock id, another lineage, a stale serial or an optimistic
//	        write conflict, with a JSON body saying which.
//	LOCK    body LockInfo: 200, or 423 with the holder's LockInfo as the
//	        whole body (what the clients decode and -lock-timeout retries).
//	        In optimistic mode every new lock id gets 200.
//	UNLOCK  see "Force unlock" below.
//	DELETE  remove the state and its history (the holder's ?ID= or
//	        ?force=true when locked).
//
// With lock_method/unlock_method = "POST": POST /v1/states/{name}/lock and
// POST /v1/states/{name}/unlock (DELETE …/lock unlocks too, as GitLab's
// backend does). POST /v1/state-unlock/{name}[?ID=] force-unlocks for proxies
// that drop an UNLOCK body.
//
// The JSON API under /v1/api/: GET states, GET states/{name} (status, with
// every lock holder and its base serial), GET
// states/{name}/versions?limit=&before=, GET states/{name}/versions/{number}
// (the document), POST states/{name}/config {"exclusive_locks": bool,
// "allow_lineage_change": bool, "shared_plan_locks": bool,
// "require_client_encryption": bool} (any of them), GET
// states/{name}/rejections?limit= (refused commits, newest first), POST
// query {"sql": "…"} (read-only). And GET /healthz, /readyz (503 with
// Retry-After while the database is down), /versionz, /metrics (Prometheus,
// with Options.Metrics set to prommetrics.New; 404 without).
//
// # Optimistic locking
//
// A state in optimistic mode ({"exclusive_locks": false}) admits many
// holders; each lock records the serial it read. At POST the engine merges
// the holder's changes onto what others committed since, at instance
// granularity (the new version stays an apply, marked merged), or refuses
// with 409:
//
//	{"error": "conflict", "message": "…",
//	 "conflicting_addresses": ["aws_instance.web[0]", "output.url"],
//	 "latest_serial": 12, "base_serial": 9,
//	 "winner": {"actor": "alice", "lock_id": "…", "version": 11},
//	 "hint": "…", "request_id": "…"}
//
// Terraform shows only "HTTP error: 409" and drops that body, so every
// refusal is also recorded (GET …/rejections, `kl conflicts`) and named,
// addresses and all, in the request's log line. The mode can change only
// while no lock is held: otherwise 409 locks_held, naming the holders.
//
// Every error is JSON {"error": code, "message", "hint"} with the right
// status, written by one function from the root package's errors — except a
// 423 on a protocol route, whose body is the holder's LockInfo, as the
// clients require. A user's mistake is never a 500.
//
// # Force unlock
//
// UNLOCK receives three kinds of body, told apart like this:
//
//   - The full LockInfo of the caller's own lock (ID, Who, Operation,
//     Created…): what both CLIs send after every locked operation. It
//     releases that lock id; another holder's lock answers 409 with that
//     holder.
//   - A LockInfo with only an ID (Who, Operation, Info, Version and Path
//     empty, Created zero): what `tofu force-unlock ID` sends since OpenTofu
//     1.10. A forced unlock of that id: released and logged as forced, with
//     who held it and for how long; if another id holds the state, 409.
//   - An empty body: what OpenTofu before 1.10 and older Terraform send
//     on force-unlock (they drop the id). A forced unlock of whoever holds
//     the state, logged the same way. (Current Terraform fails force-unlock
//     of an http backend before sending anything; POST
//     /v1/state-unlock/{name}?ID=… is the way there.)
//
// Unlocking a state that holds no lock answers 200: the caller wanted its
// lock gone and it is, and a client retrying an UNLOCK whose answer it lost
// must not fail. A LOCK repeated with the id that already holds the state
// answers 200 for the same reason.
package httpbackend
