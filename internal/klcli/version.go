package klcli

import (
	"context"
)

// VersionJSON is the JSON output of Version. Server is nil when kl was not
// pointed at a server.
type VersionJSON struct {
	Client VersionInfo  `json:"client"`
	Server *VersionInfo `json:"server,omitempty"`
}

// Version shows kl's build information and, when the backend is a server
// (a ServerVersioner), the server's.
func (c *CLI) Version(ctx context.Context, client VersionInfo) error {
	out := VersionJSON{Client: client}
	if sv, ok := c.Backend.(ServerVersioner); ok {
		v, err := sv.ServerVersion(ctx)
		if err != nil {
			return err
		}
		out.Server = v // nil for a database
	}
	return c.show(out, func() error {
		w := c.table()
		row(w, "", "VERSION", "COMMIT", "DATE", "GO")
		row(w, "client", orDash(client.Version), orDash(client.Commit), orDash(client.Date), orDash(client.GoVersion))
		if out.Server != nil {
			row(w, "server", orDash(out.Server.Version), orDash(out.Server.Commit), orDash(out.Server.Date), orDash(out.Server.GoVersion))
		}
		return w.Flush()
	})
}
