// Package client is the Go client of kld, KiloLock's server: one typed
// method per route of its API, with the same request and answer types the
// server encodes, so that the two cannot disagree.
//
// # Basics
//
// A Client talks to one kld:
//
//	c, err := client.New("https://kld.example.com",
//		client.WithCredentials(client.Token(os.Getenv("KL_TOKEN"))),
//		client.WithTimeout(30*time.Second))
//	if err != nil {
//		return err
//	}
//	states, err := c.States(ctx)
//	if err != nil {
//		return err
//	}
//	for _, s := range states.States {
//		fmt.Println(s.Name, s.Serial)
//	}
//
//	// Follow an orchestrated apply until it ends.
//	for {
//		run, err := c.Run(ctx, runID)
//		if err != nil {
//			return err
//		}
//		if run.Status.Ended() {
//			break
//		}
//		time.Sleep(time.Second)
//	}
//
//	// Read a state's outputs, as terraform_remote_state does.
//	f, err := c.Outputs(ctx, "network")
//	if err != nil {
//		return err
//	}
//	defer f.Close()
//
// Credentials are the operator token, a tenant's automation token or a
// personal access token (Token), the workspace-id/token pair Terraform
// sends (Basic), or a TokenSource asked at each request, for credentials
// that are renewed (a CI job's identity token).
//
// # Errors
//
// An error answer is an *Error, which carries the server's code, message,
// hint (what to do next) and request id, and unwraps to the root package's
// error it stands for, so errors.Is and errors.As work as they do on an
// Engine in this process:
//
//	_, err := c.Lock(ctx, "network", info, "")
//	var locked *kilolock.LockedError
//	if errors.As(err, &locked) {
//		fmt.Println("held by", locked.Holder.Who)
//	}
//	if errors.Is(err, kilolock.ErrNotFound) { … }
//
// A 503 that asks to retry later (Retry-After) is retried, a bounded
// number of times (WithRetries); the call's context bounds the waiting.
//
// # Without a socket
//
// InProcess serves requests with an http.Handler in this process: with
// kld's handler over an engine opened on a database, the same client, and
// every command written over it, reaches the database directly. Answers
// are streamed through a pipe, not buffered.
//
//	h := httpbackend.New(kilolock.NewEngine(st, kilolock.Options{}), httpbackend.Options{})
//	c, err := client.New("http://in-process", client.WithTransport(client.InProcess(h)))
//
// # Caveats
//
// Methods that stream (State, Outputs, StateVersion, Slice, Export,
// Backup) return a body the caller must close. On a server with
// --auth=token a state's protocol name is WORKSPACE_ID/ENV_ID/STATE.
package client
