package klcli

import (
	"context"
	"io"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/orchestrate"
)

// QuotaStatus is orchestrate.QuotaStatus over b: on the JSON API, or,
// for a configuration's lane (laneQuota), at the state's own address.
func (b *Conn) QuotaStatus(ctx context.Context, name string, delta int64) (*kilolock.QuotaStatus, error) {
	return orchestrate.QuotaStatus(ctx, b.api, b.lane, name, delta)
}

// admission is the admission of state's plans over b, printed to out
// after prefix.
func (b *Conn) admission(state string, out io.Writer, prefix string) *orchestrate.Admission {
	return &orchestrate.Admission{Client: b.api, Lane: b.lane, State: state, Out: out, Prefix: prefix}
}

// quotaBackend finds the backend and state kl quota asks: with
// --database, the database; with a state named (--state or NAME), the
// server's JSON API (--server, --token); otherwise the initialized http
// backend of dir, asked at the state's own address with the
// configuration's credentials (--server and --token override them).
func (g *Globals) quotaBackend(ctx context.Context, state, dir string) (*Conn, string, error) {
	var b *orchestrate.TFBackend
	if state == "" {
		var err error
		if b, err = orchestrate.ReadTFBackend(dir); err != nil {
			return nil, "", err
		}
		state = b.State
	}
	var qb *Conn
	var err error
	if g.Database != "" || b == nil {
		qb, err = g.open(ctx)
	} else {
		qb, err = g.laneQuota(b)
	}
	return qb, state, err
}

// laneQuota is the backend of an initialized backend b that asks quotas
// at its state's address on its server (--server overrides), with its
// credentials (--token overrides them), so that the configuration's token
// is enough.
func (g *Globals) laneQuota(b *orchestrate.TFBackend) (*Conn, error) {
	server := b.Server
	if g.Server != "" {
		server = g.Server
	}
	user, password, headers := orchestrate.BackendCredentials(b.Config)
	hb, err := NewConn(server, HTTPOptions{Token: g.Token, Timeout: g.Timeout, Actor: g.Actor, Username: user, Password: password, Headers: headers})
	if err != nil {
		return nil, err
	}
	hb.lane = true
	return hb, nil
}

// admissionConn is what answers the admission of the initialized
// backend b's plans: the database with --database, else the state's own
// address. Close it.
func (g *Globals) admissionConn(ctx context.Context, b *orchestrate.TFBackend) (*Conn, error) {
	if g.Database != "" {
		return Open(ctx, Target{Database: g.Database, KeyFile: g.KeyFile, Actor: g.Actor})
	}
	return g.laneQuota(b)
}
