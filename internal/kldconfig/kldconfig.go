// Package kldconfig holds kld's flags that bound what one request may make
// the store do, and those of how it serves (authentication, TLS), with
// what they set, so that cmd/kld stays small:
//
//	type cli struct {
//		Limits  kldconfig.Limits  `embed:""`
//		Serving kldconfig.Serving `embed:""`
//	}
//	st, err := store.Open(ctx, url, c.Limits.StoreOptions()...)
//	engine := kilolock.NewEngine(st, c.Limits.Engine(kilolock.Options{Logger: logger}))
package kldconfig

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/keyring"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/store"
)

// Limits are the flags of users' SQL and of optimistic holders.
type Limits struct {
	QueryTimeout    time.Duration        `default:"30s" env:"KL_QUERY_TIMEOUT" help:"How long one query of users' SQL (kl query, the API's query route) may run, on either store."`
	QueryMaxRows    int                  `default:"10000" env:"KL_QUERY_MAX_ROWS" help:"Most rows a query answers; the rest are dropped."`
	QueryMaxBytes   httpbackend.ByteSize `default:"8MiB" env:"KL_QUERY_MAX_BYTES" help:"Largest query answer, and largest value in it, e.g. 8MiB; past it the query is refused (query_too_large)."`
	QueryDatabase   string               `name:"query-database-url" env:"KL_QUERY_DATABASE_URL" help:"PostgreSQL only: run users' queries on this URL (a role that may read only the views, or a replica) rather than as the query role kld makes."`
	LazyLockSync    bool                 `name:"sqlite-lazy-lock-sync" env:"KL_SQLITE_LAZY_LOCK_SYNC" help:"SQLite only: write locks and unlocks without waiting for the disk (commits still do), one fsync a Terraform write cycle instead of three. A power cut or OS crash (not a crash of kld) may then undo the last locks or unlocks: a lost lock's holder has its POST refused, never taken over; an undone unlock needs a force-unlock. Off by default."`
	QueryAtOnce     int                  `name:"query-concurrency" default:"2" env:"KL_QUERY_CONCURRENCY" help:"Most queries one credential (a token, a PAT, the operator token; a remote host without --auth=token) may run at once; one more is answered 429 too_many_queries with Retry-After. 0 for no limit."`
	MaxLockHolders  int                  `default:"100" env:"KL_MAX_LOCK_HOLDERS" help:"Most holders one state admits at once (optimistic writers and plans); 0 for no cap."`
	SharedPlanLocks bool                 `default:"true" negatable:"" env:"KL_SHARED_PLAN_LOCKS" help:"Plans take shared read locks, granted beside an apply and other plans (states may choose otherwise with kl state config --shared-plan-locks); --no-shared-plan-locks makes plans wait like applies."`
	PlanLockLimit   time.Duration        `default:"1h" env:"KL_PLAN_LOCK_LIMIT" placeholder:"DURATION" help:"Longest a plan's lock is held: kld ends the locks of plans (their shared read locks, or their exclusive ones with --no-shared-plan-locks) held longer, checking every quarter of it (at most every minute). A plan never writes, so this loses no work: it frees the lock of a plan whose CLI died. 0 keeps them until released."`
	// DefaultStateQuota is the limit of states that set none.
	DefaultStateQuota StateQuota `env:"KL_DEFAULT_STATE_QUOTA" placeholder:"SOFT,HARD" help:"Limit on the managed resource instances of a state that sets none and whose workspace sets none: SOFT,HARD (exactly HARD is allowed, one more refused with 403 quota_exceeded; above SOFT warns), HARD, or unlimited (the default). kl quota set changes one state's."`
}

// Retention are the flags of kld's scheduled pruning.
type Retention struct {
	RetentionInterval time.Duration `env:"KL_RETENTION_INTERVAL" placeholder:"DURATION" help:"Prune the versions the retention policies do not keep (kl retention set) at start and then every DURATION, e.g. 1h, recorded as kld:retention; 0 (the default) never prunes by itself (kl retention apply does, on demand)."`
	RetentionBatch    int           `default:"100" env:"KL_RETENTION_BATCH" help:"Most versions one transaction of the scheduled pruning prunes (1 to 10000)."`
}

// Validate checks the flags; kong calls it as it parses them.
func (r *Retention) Validate() error {
	if r.RetentionInterval < 0 || (r.RetentionInterval > 0 && r.RetentionInterval < time.Second) {
		return fmt.Errorf("--retention-interval %s: give 0 (no schedule) or at least 1s", r.RetentionInterval)
	}
	if r.RetentionBatch < 1 || r.RetentionBatch > 10_000 {
		return fmt.Errorf("--retention-batch %d: give 1 to 10000", r.RetentionBatch)
	}
	return nil
}

// StateQuota is the value of --default-state-quota: "SOFT,HARD", "HARD"
// or "unlimited" (quota.ParseLimit); the zero value sets none.
type StateQuota struct{ Limit *quota.Limit }

// UnmarshalText parses the flag.
func (q *StateQuota) UnmarshalText(text []byte) error {
	l, err := quota.ParseLimit(string(text))
	if err != nil {
		return err
	}
	q.Limit = &l
	return nil
}

// String is the flag as kld logs it: "unlimited" when none is set.
func (q StateQuota) String() string {
	if q.Limit == nil {
		return "unlimited"
	}
	return q.Limit.String()
}

// Validate checks --plan-lock-limit; kong calls it as it parses the flags.
func (l *Limits) Validate() error {
	if l.PlanLockLimit < 0 || (l.PlanLockLimit > 0 && l.PlanLockLimit < time.Second) {
		return fmt.Errorf("--plan-lock-limit %s: give 0 (plans' locks are kept until released) or at least 1s", l.PlanLockLimit)
	}
	return nil
}

// Engine returns o with the limits set.
func (l *Limits) Engine(o kilolock.Options) kilolock.Options {
	o.QueryLimits = kilolock.QueryLimits{Timeout: l.QueryTimeout, MaxRows: l.QueryMaxRows, MaxBytes: int(l.QueryMaxBytes)}
	o.MaxLockHolders = l.MaxLockHolders
	o.ClassicPlanLocks = !l.SharedPlanLocks
	if l.DefaultStateQuota.Limit != nil && !l.DefaultStateQuota.Limit.Unlimited {
		o.DefaultStateQuota = l.DefaultStateQuota.Limit
	}
	if l.MaxLockHolders <= 0 {
		o.MaxLockHolders = -1 // no cap
	}
	return o
}

// Handler returns o with the limit of the query route set.
func (l *Limits) Handler(o httpbackend.Options) httpbackend.Options {
	o.QueryConcurrency = l.QueryAtOnce
	if l.QueryAtOnce <= 0 {
		o.QueryConcurrency = -1 // no limit
	}
	return o
}

// StoreOptions returns the options of store.Open the flags ask for.
func (l *Limits) StoreOptions() []store.Option {
	var opts []store.Option
	if l.QueryDatabase != "" {
		opts = append(opts, store.WithQueryURL(l.QueryDatabase))
	}
	if l.LazyLockSync {
		opts = append(opts, store.WithLazyLockSync())
	}
	return opts
}

// Serving are the flags of how kld serves: authentication and TLS.
type Serving struct {
	Auth          string `default:"none" env:"KL_AUTH" enum:"none,token" help:"none: serve /v1/states/NAME to anyone (local use); token: serve only /v1/states/WORKSPACE/ENV/NAME to tokens, and the API to the operator token."`
	OperatorToken string `env:"KL_OPERATOR_TOKEN" help:"The operator's bootstrap token for the JSON API and its control routes with --auth=token: klo_ and at least 32 characters, as kl token operator makes them; only its hash is kept."`
	TLSCert       string `env:"KL_TLS_CERT" help:"PEM certificate (chain) file: serve HTTPS with --tls-key." type:"existingfile"`
	TLSKey        string `env:"KL_TLS_KEY" help:"PEM private key file of --tls-cert." type:"existingfile"`
	PublicURL     string `name:"public-url" env:"KL_PUBLIC_URL" placeholder:"URL" help:"The URL clients reach kld at, when a proxy in front of it terminates TLS, e.g. https://kl.example.com: with https the web view's cookies are Secure and answers carry Strict-Transport-Security, as with --tls-cert."`
}

// Validate checks --operator-token (httpbackend.ValidOperatorSecret: klo_
// and at least 32 characters, as kl token operator makes them) and
// --public-url: an absolute http or https URL of a host, with no query or
// fragment. Kong calls it as it parses the flags.
func (s *Serving) Validate() error {
	if s.OperatorToken != "" {
		if err := httpbackend.ValidOperatorSecret(s.OperatorToken); err != nil {
			return fmt.Errorf("--operator-token (KL_OPERATOR_TOKEN): %w", err)
		}
	}
	if s.PublicURL == "" {
		return nil
	}
	u, err := url.Parse(s.PublicURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("--public-url %q: give the URL clients reach kld at, e.g. https://kl.example.com (http or https, a host, no query)", s.PublicURL)
	}
	return nil
}

// Public is --public-url, parsed: nil when not given.
func (s *Serving) Public() *url.URL {
	if s.PublicURL == "" {
		return nil
	}
	u, err := url.Parse(s.PublicURL)
	if err != nil {
		return nil // Validate refused it
	}
	return u
}

// BehindTLS reports whether clients reach kld over HTTPS: its own TLS, or
// a proxy's that --public-url names.
func (s *Serving) BehindTLS() bool {
	u := s.Public()
	return s.TLSCert != "" || u != nil && u.Scheme == "https"
}

// AuthMode is the handler's authentication mode --auth asks for.
func (s *Serving) AuthMode() httpbackend.AuthMode {
	if s.Auth == "token" {
		return httpbackend.AuthToken
	}
	return httpbackend.AuthNone
}

// TLSConfig loads --tls-cert and --tls-key: nil when neither is given, an
// error when only one is or they cannot be read.
func (s *Serving) TLSConfig() (*tls.Config, error) {
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if s.TLSCert == "" {
		return nil, nil
	}
	pair, err := tls.LoadX509KeyPair(s.TLSCert, s.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert and --tls-key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// Redact hides a password in a database URL, for the log.
func Redact(database string) string {
	if u, err := url.Parse(database); err == nil && u.User != nil {
		return u.Redacted()
	}
	return database
}

// Encryption is the flag of encryption at rest. The keys themselves may
// also come from KL_ENCRYPTION_KEY, which has no flag: a key on a command
// line would show in every process listing.
type Encryption struct {
	EncryptionKeyFile string `name:"encryption-key-file" env:"KL_ENCRYPTION_KEY_FILE" type:"existingfile" placeholder:"FILE" help:"Encrypt at rest what Terraform marks sensitive and the raw documents kept, with these keys: one base64 32-byte key per line (kl keys generate makes one), the first active, the others only to read what they wrapped until kl keys rotate re-wraps it. KL_ENCRYPTION_KEY may hold keys too (after the file's). Without keys, a database that holds encrypted values is refused at start."`
}

// Ring returns the keyring the flag and KL_ENCRYPTION_KEY give, nil for
// none.
func (e *Encryption) Ring() (*keyring.Ring, error) {
	return keyring.Load(e.EncryptionKeyFile, os.Getenv("KL_ENCRYPTION_KEY"))
}

// StoreOptions returns the option of store.Open that encrypts with the
// keys and what to log of them (the active key's ID, or "off"), or an
// *kilolock.InvalidError when they cannot be read: invalid_encryption_key,
// or key_file_mode for a key file others may read (keyring.ModeError). A
// key file its group may read is logged as a warning.
func (e *Encryption) StoreOptions(logger *log.Logger) ([]store.Option, string, error) {
	r, err := e.Ring()
	var me *keyring.ModeError
	switch {
	case errors.As(err, &me):
		return nil, "", &kilolock.InvalidError{Code: "key_file_mode", Message: err.Error(), Hint: me.Hint()}
	case err != nil:
		return nil, "", &kilolock.InvalidError{Code: "invalid_encryption_key", Message: err.Error(),
			Hint: "give one base64-encoded 32-byte key per line (kl keys generate prints one), in --encryption-key-file or KL_ENCRYPTION_KEY"}
	}
	if e.EncryptionKeyFile != "" {
		if warning, _ := keyring.CheckFileMode(e.EncryptionKeyFile); warning != "" {
			logger.Warn("encryption keys: " + warning)
		}
	}
	if r == nil {
		return []store.Option{store.WithKeyring(nil)}, "off", nil
	}
	return []store.Option{store.WithKeyring(r)}, fmt.Sprintf("key %s (%d configured)", r.Active(), len(r.IDs())), nil
}
