package klcli

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/kilolock/kilolock/keyring"
)

// DefaultServer is the server kl talks to when given neither a server nor a
// database: a kld started with its defaults on this machine.
const DefaultServer = "http://127.0.0.1:8080"

// Target says where kl's commands go: a server or a database, never both.
type Target struct {
	Server   string // base URL of a kld server
	Database string // store URL: postgres://… or a SQLite file path
	// KeyFile names the keys of encryption at rest of Database, with
	// those of KL_ENCRYPTION_KEY (see keyring.Load).
	KeyFile string
	Token   string        // bearer token sent to the server, if any
	Timeout time.Duration // per HTTP request; zero means DefaultTimeout
	// Actor is recorded on the versions kl makes (rollback, state
	// operations, import); empty means "kl".
	Actor string
}

// loadKeyring loads the keys of encryption at rest from keyFile and
// KL_ENCRYPTION_KEY: nil when neither holds any.
func loadKeyring(keyFile string) (*keyring.Ring, error) {
	ring, err := keyring.Load(keyFile, os.Getenv("KL_ENCRYPTION_KEY"))
	var me *keyring.ModeError
	if errors.As(err, &me) {
		return nil, withHint(err, me.Hint())
	}
	if err != nil {
		return nil, withHint(err, "--encryption-key-file (KL_ENCRYPTION_KEY_FILE) and KL_ENCRYPTION_KEY take one base64 32-byte key per line; kl keys generate prints one")
	}
	return ring, nil
}

// Open returns the Conn for t: to a server (DefaultServer when t names
// nothing) or, in-process, to a database (openDatabase). Naming both is a
// *UsageError.
func Open(ctx context.Context, t Target) (*Conn, error) {
	switch {
	case t.Server != "" && t.Database != "":
		return nil, &UsageError{
			Message: "both a server and a database were given",
			Hint:    "use either --server (KL_SERVER) or --database (KL_DATABASE_URL), not both",
		}
	case t.Database != "":
		return openDatabase(ctx, t)
	}
	server := t.Server
	if server == "" {
		server = DefaultServer
	}
	return NewConn(server, HTTPOptions{Token: t.Token, Timeout: t.Timeout, Actor: t.Actor})
}
