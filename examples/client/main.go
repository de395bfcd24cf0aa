// Command client shows the public Go client of kld: it lists the states,
// follows an orchestrated apply run until it ends, and reads a state's
// outputs.
//
//	go run ./examples/client -url http://localhost:8080 -state network
//	go run ./examples/client -url https://kld.example.com -token klo_… -state network -run run_…
//
// With no -run it follows the newest in-flight run of -state, if any.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
)

// config is what main parses.
type config struct {
	URL   string
	Token string
	State string
	Run   string
	// Poll is how often the run is asked about.
	Poll time.Duration
	Out  io.Writer
}

func main() {
	cfg := config{Out: os.Stdout}
	flag.StringVar(&cfg.URL, "url", "http://localhost:8080", "the kld to call")
	flag.StringVar(&cfg.Token, "token", os.Getenv("KL_TOKEN"), "a bearer token (operator, automation or personal), if the server asks for one")
	flag.StringVar(&cfg.State, "state", "", "the state whose run to follow and whose outputs to read")
	flag.StringVar(&cfg.Run, "run", "", "the apply run to follow (default: the state's newest in-flight run)")
	flag.DurationVar(&cfg.Poll, "poll", time.Second, "how often to ask about the run")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		var ce *client.Error
		if errors.As(err, &ce) && ce.Hint() != "" {
			fmt.Fprintln(os.Stderr, "next:", ce.Hint())
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	opts := []client.Option{client.WithTimeout(30 * time.Second)}
	if cfg.Token != "" {
		opts = append(opts, client.WithCredentials(client.Token(cfg.Token)))
	}
	c, err := client.New(cfg.URL, opts...)
	if err != nil {
		return err
	}

	states, err := c.States(ctx)
	if err != nil {
		return fmt.Errorf("list states: %w", err)
	}
	fmt.Fprintf(cfg.Out, "%d state(s)\n", len(states.States))
	for _, s := range states.States {
		fmt.Fprintf(cfg.Out, "  %-24s serial %d\n", s.Name, s.Serial)
	}
	if cfg.State == "" {
		return nil
	}

	if err := follow(ctx, c, cfg); err != nil {
		return err
	}

	f, err := c.Outputs(ctx, cfg.State)
	if errors.Is(err, kilolock.ErrNotFound) {
		fmt.Fprintf(cfg.Out, "state %s has no version yet: no outputs\n", cfg.State)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read outputs: %w", err)
	}
	defer f.Close()
	var doc struct {
		Outputs map[string]struct {
			Value     json.RawMessage `json:"value"`
			Sensitive bool            `json:"sensitive"`
		} `json:"outputs"`
	}
	if err := json.NewDecoder(f).Decode(&doc); err != nil {
		return fmt.Errorf("read outputs: %w", err)
	}
	names := make([]string, 0, len(doc.Outputs))
	for n := range doc.Outputs {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(cfg.Out, "outputs of %s (version %d, serial %d):\n", cfg.State, f.Version, f.Serial)
	for _, n := range names {
		v := string(doc.Outputs[n].Value)
		if doc.Outputs[n].Sensitive {
			v = "(sensitive)"
		}
		fmt.Fprintf(cfg.Out, "  %s = %s\n", n, v)
	}
	return nil
}

// follow asks about the run until it ends, printing each change of its
// status.
func follow(ctx context.Context, c *client.Client, cfg config) error {
	id := cfg.Run
	if id == "" {
		runs, err := c.Runs(ctx, cfg.State, client.RunsOptions{InFlight: true, Limit: 1})
		if err != nil {
			return fmt.Errorf("list runs: %w", err)
		}
		if len(runs.Runs) == 0 {
			fmt.Fprintf(cfg.Out, "no run in flight on %s\n", cfg.State)
			return nil
		}
		id = runs.Runs[0].ID
	}
	var last kilolock.RunStatus
	for {
		r, err := c.Run(ctx, id)
		if err != nil {
			return fmt.Errorf("follow run %s: %w", id, err)
		}
		if r.Status != last {
			fmt.Fprintf(cfg.Out, "run %s by %s: %s\n", r.ID, r.Actor, r.Status)
			last = r.Status
		}
		if r.Status.Ended() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cfg.Poll):
		}
	}
}
