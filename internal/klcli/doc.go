// Package klcli holds the logic of kl, the KiloLock command-line client, so
// that it can be tested without a process: every command writes to an
// io.Writer and talks to a Backend.
//
// # Basics
//
// A Backend is either a kld server reached over HTTP (HTTPBackend, the
// server's JSON API under /v1/api) or a database opened in-process
// (EngineBackend, store.Open plus kilolock.NewEngine). The commands do not
// know which: the library and the server answer the same questions the same
// way.
//
//	b, err := klcli.Open(ctx, klcli.Target{Database: "kilolock.db"})
//	if err != nil {
//		return err
//	}
//	defer b.Close()
//	c := &klcli.CLI{Backend: b, Out: os.Stdout}
//	err = c.History(ctx, "prod", kilolock.HistoryOptions{Limit: 10})
//	os.Exit(klcli.ExitCode(err))
//
// # Caveats
//
// Human output is aligned text meant for people; scripts should pass JSON
// (CLI.JSON) and read the documented shapes, which follow the server's API.
package klcli
