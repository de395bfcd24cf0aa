package klcli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/internal/buildinfo"
	"github.com/kilolock/kilolock/reserve"
)

// StatusCmd is kl status.
type StatusCmd struct {
	stateArg
}

// Run runs the command.
func (c *StatusCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Status(ctx, c.Name) })
}

// Status shows a state: its current version and serial, lineage, lock mode,
// the holders of its locks, the apply runs in flight with their
// reservations and lease left, its instances counted by resource type,
// and, where a limit applies or a write was refused, its quota standing
// and latest refusal.
// JSON output is kilolock.Status, as the server's API answers it.
func (c *CLI) Status(ctx context.Context, name string) error {
	s, err := c.api().Status(ctx, name)
	if err != nil {
		return err
	}
	return c.show(s, func() error {
		now := c.now()
		w := c.table()
		row(w, "state:", s.Name)
		if s.Version == nil {
			row(w, "version:", "none yet (the state was locked, never written)")
		} else {
			source := string(s.Version.Source)
			if s.Version.MergedWrite() {
				source += " (merged)"
			}
			row(w, "version:", fmt.Sprintf("%d (serial %d, %s by %s, %s)",
				s.Version.Number, s.Version.Serial, source, orDash(s.Version.Actor), formatTime(s.Version.Created)))
		}
		row(w, "lineage:", orDash(s.Lineage))
		row(w, "lock mode:", string(s.LockMode))
		if s.AllowLineageChange {
			row(w, "lineage change:", "allowed for the next write")
		}
		if enc := cell(s.State.EncryptionText()); enc != "" {
			row(w, "encryption:", enc)
		}
		readers := 0
		for _, l := range s.Locks {
			if l.Shared {
				readers++
			}
		}
		switch {
		case len(s.Locks) == 0:
			row(w, "locked:", "no")
		case readers == len(s.Locks):
			row(w, "locked:", "no writer; "+plural(readers, "plan reads", "plans read")+" (shared read locks)")
		case readers > 0:
			row(w, "locked:", "yes, "+plural(len(s.Locks)-readers, "writer", "writers")+"; "+plural(readers, "plan reads", "plans read")+" beside")
		default:
			row(w, "locked:", "yes, "+plural(len(s.Locks), "holder", "holders"))
		}
		switch {
		case s.Encrypted:
			row(w, "instances:", "unknown: the state is client-side encrypted")
		case s.Version != nil:
			row(w, "instances:", strconv.Itoa(s.Instances))
		}
		switch {
		case s.Drifted == nil: // never checked
		case *s.Drifted == 0:
			row(w, "drift:", "none open")
		default:
			row(w, "drift:", plural(*s.Drifted, "instance differs", "instances differ")+" from the real infrastructure (kl drift list "+cell(s.Name)+")")
		}
		if q := s.Quota; q != nil {
			for _, c := range q.Counts {
				if c.From != kilolock.LimitFromNone {
					row(w, "quota:", cell(c.Message()))
				}
			}
			if q.LatestRefusal != nil {
				row(w, "quota refused:", quotaEventText(q.LatestRefusal)+"; kl quota status "+s.Name)
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}

		if len(s.Locks) > 0 {
			fmt.Fprintln(c.Out)
			w = c.table()
			row(w, "WHO", "KIND", "OPERATION", "LOCK ID", "AGE", "BASE SERIAL")
			for _, l := range s.Locks {
				kind := "write"
				switch {
				case l.Shared:
					kind = "read"
				case l.Run != "":
					kind = "run " + l.Run
				}
				row(w, orDash(l.Info.Who), kind, orDash(l.Info.Operation), orDash(l.Info.ID),
					formatAge(now.Sub(l.Acquired)), strconv.FormatUint(l.BaseSerial, 10))
			}
			if err := w.Flush(); err != nil {
				return err
			}
		}
		if err := c.writeRuns(s.Runs, now); err != nil {
			return err
		}
		if len(s.Types) > 0 {
			fmt.Fprintln(c.Out)
			w = c.table()
			row(w, "TYPE", "INSTANCES")
			for _, t := range s.Types {
				row(w, cell(t.Type), strconv.Itoa(t.Count))
			}
			return w.Flush()
		}
		return nil
	})
}

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

// maxShownReservations bounds the reservation rows kl status prints per
// run; --json has them all.
const maxShownReservations = 20

// writeRuns prints the apply runs in flight: one row per run, then its
// reservations.
func (c *CLI) writeRuns(runs []kilolock.ApplyRun, now time.Time) error {
	if len(runs) == 0 {
		return nil
	}
	fmt.Fprintln(c.Out)
	w := c.table()
	row(w, "APPLY RUN", "ACTOR", "STATUS", "LEASE LEFT", "RESERVATIONS")
	for i := range runs {
		r := &runs[i]
		writes := 0
		for _, res := range r.Reservations {
			if res.Mode == reserve.Write {
				writes++
			}
		}
		row(w, r.ID, orDash(r.Actor), string(r.StatusAt(now)), formatAge(leaseLeft(r, now)),
			fmt.Sprintf("%d (%d write, %d read)", len(r.Reservations), writes, len(r.Reservations)-writes))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.Out)
	w = c.table()
	row(w, "APPLY RUN", "RESERVED", "MODE")
	for i := range runs {
		r := &runs[i]
		for j, res := range r.Reservations {
			if j == maxShownReservations {
				row(w, r.ID, "… and "+strconv.Itoa(len(r.Reservations)-j)+" more (--json lists them)", "")
				break
			}
			row(w, r.ID, cell(res.Pattern.String()), string(res.Mode))
		}
	}
	return w.Flush()
}

// leaseLeft is how long a run's lease holds from now; 0 once it ran out.
func leaseLeft(r *kilolock.ApplyRun, now time.Time) time.Duration {
	return max(r.Expires.Sub(now), 0)
}

// StatesCmd is kl states.
type StatesCmd struct {
	JSONFlag
}

// Run runs the command.
func (c *StatesCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.States(ctx) })
}

// States lists every state: current version and serial, lock mode and who
// holds it. Its JSON is the server's answer (client.StateList).
func (c *CLI) States(ctx context.Context) error {
	l, err := c.api().States(ctx)
	if err != nil {
		return err
	}
	sts := nonNil(l.States)
	l.States = sts
	return c.show(l, func() error {
		if len(sts) == 0 {
			return c.printf("no states yet\n")
		}
		return writeTable(c, sts, []string{"NAME", "VERSION", "SERIAL", "LOCK MODE", "LOCKED BY", "ENCRYPTION", "CREATED"}, func(s kilolock.State) []string {
			version, serial := "-", "-"
			if s.Current > 0 {
				version, serial = strconv.FormatInt(s.Current, 10), strconv.FormatUint(s.Serial, 10)
			}
			return []string{cell(s.Name), version, serial, string(s.LockMode), holders(s.Locks), orDash(s.EncryptionSummary()), formatTime(s.Created)}
		})
	})
}

// holders names who holds locks, "-" for nobody.
func holders(locks []kilolock.Lock) string {
	if len(locks) == 0 {
		return "-"
	}
	who := make([]string, len(locks))
	for i, l := range locks {
		who[i] = orDash(l.Info.Who)
	}
	return strings.Join(who, ", ")
}
