// Package klcli holds the logic of kl, the KiloLock command-line client, so
// that it can be tested without a process: every command writes to an
// io.Writer and talks to kld's JSON API through a Conn.
//
// # Basics
//
// A Conn reaches kld's JSON API through package client, whose methods and
// wire types the commands use directly: over HTTP from a kld server, or in-process from a database (--database: kld's
// handler over an Engine on it, reached through client.InProcess with no
// socket, as that database's operator). Each command is so written once,
// and behaves the same whichever kl reaches.
//
//	b, err := klcli.Open(ctx, klcli.Target{Database: "kilolock.db"})
//	if err != nil {
//		return err
//	}
//	defer b.Close()
//	c := &klcli.CLI{Conn: b, Out: os.Stdout}
//	err = c.History(ctx, "prod", kilolock.HistoryOptions{Limit: 10})
//	os.Exit(klcli.ExitCode(err))
//
// # Caveats
//
// Human output is aligned text meant for people; scripts should pass JSON
// (CLI.JSON) and read the documented shapes, which follow the server's API.
package klcli
