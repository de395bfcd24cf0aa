package klcli

import (
	"context"

	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/internal/buildinfo"
)

// VersionCmd is kl version.
type VersionCmd struct {
	JSONFlag
}

// Run runs the command.
func (c *VersionCmd) Run(ctx context.Context, g *Globals) error {
	info := buildinfo.Info()
	kl := client.VersionInfo{Version: info.Version, Commit: info.Commit, Date: info.Date, GoVersion: info.GoVersion}
	if g.Server == "" {
		// No server named: show kl's own version without dialing anyone.
		cli := &CLI{Out: g.out(), JSON: c.JSON}
		return cli.Version(ctx, kl)
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Version(ctx, kl) })
}

// VersionJSON is the JSON output of Version. Server is nil when kl was not
// pointed at a server.
type VersionJSON struct {
	Client client.VersionInfo  `json:"client"`
	Server *client.VersionInfo `json:"server,omitempty"`
}

// Version shows kl's build information and, when the backend is a server,
// the server's.
func (c *CLI) Version(ctx context.Context, kl client.VersionInfo) error {
	out := VersionJSON{Client: kl}
	if c.Conn != nil && !c.Conn.database { // a database has no server
		v, err := c.api().Version(ctx)
		if err != nil {
			return err
		}
		out.Server = v
	}
	return c.show(out, func() error {
		w := c.table()
		row(w, "", "VERSION", "COMMIT", "DATE", "GO")
		row(w, "client", orDash(kl.Version), orDash(kl.Commit), orDash(kl.Date), orDash(kl.GoVersion))
		if out.Server != nil {
			row(w, "server", orDash(out.Server.Version), orDash(out.Server.Commit), orDash(out.Server.Date), orDash(out.Server.GoVersion))
		}
		return w.Flush()
	})
}
