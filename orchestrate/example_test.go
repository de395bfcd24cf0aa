package orchestrate_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/orchestrate"
)

// An orchestrated apply of one file's blocks, from a CI job.
func ExampleApply() {
	ctx, stop := orchestrate.SignalContext(context.Background())
	defer stop()
	b, err := orchestrate.ReadTFBackend("infra")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	c, err := client.New(b.Server, client.WithCredentials(client.Token(os.Getenv("KL_TOKEN"))))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	err = orchestrate.Apply(ctx, orchestrate.ApplyRequest{
		Dir: "infra", Scope: orchestrate.Scope{Files: []string{"infra/network.tf"}},
		Orchestrated: true, WaitTimeout: 5 * time.Minute, Backend: b, Runs: c,
		Admission: &orchestrate.Admission{Client: c, State: b.State, Out: os.Stderr},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}
