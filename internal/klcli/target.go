package klcli

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/keyring"
)

// Backend is what kl's commands need from KiloLock. Both implementations
// answer with the root package's types and errors, so a command behaves the
// same whether it runs against a server or a database.
type Backend interface {
	// Status summarizes a state. ErrNotFound when it does not exist.
	Status(ctx context.Context, name string) (*kilolock.Status, error)
	// History lists a state's versions, newest first. ErrNotFound when the
	// state does not exist; an empty list when it has no version yet.
	History(ctx context.Context, name string, opts kilolock.HistoryOptions) ([]kilolock.Version, error)
	// States lists every state by name; an empty list when there is none.
	States(ctx context.Context) ([]kilolock.State, error)
	// Query runs one read-only SQL statement. ErrReadOnly when it tries to
	// write.
	Query(ctx context.Context, sql string) (*kilolock.QueryResult, error)
	// ConfigureState changes the settings of a state that s sets, the lock
	// mode first: setting it creates a missing state, and while any lock is
	// held it is refused with a conflict (ReasonLocksHeld, naming the
	// holders) and nothing changes. AllowLineageChange alone on a missing
	// state is ErrNotFound.
	ConfigureState(ctx context.Context, name string, s StateSettings) error
	// Rejections lists a state's refused commits, newest first, at most
	// limit (0 means the server's default, 50). ErrNotFound when the state
	// does not exist; an empty list when nothing was refused.
	Rejections(ctx context.Context, name string, limit int) ([]kilolock.Rejection, error)
	// ReadVersion returns the document of one version of a state.
	// ErrNotFound when the state or the version does not exist.
	ReadVersion(ctx context.Context, name string, number int64) ([]byte, error)
	StateOps
	GraphOps
	TagOps
	DriftOps
	// Close releases the backend's resources.
	Close() error
}

// StateSettings are the settings of one state; nil leaves a setting as it
// is.
type StateSettings = client.StateConfig

// VersionInfo is the build information of kl or of a server, in the shape of
// the server's /versionz.
type VersionInfo = client.VersionInfo

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

// Open returns the Backend for t: HTTPBackend for a server (DefaultServer
// when t names nothing) or, in-process, for a database (openDatabase).
// Naming both is a *UsageError.
func Open(ctx context.Context, t Target) (*HTTPBackend, error) {
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
	return NewHTTPBackend(server, HTTPOptions{Token: t.Token, Timeout: t.Timeout, Actor: t.Actor})
}
