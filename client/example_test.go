package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/store/sqlite"
)

// A client of kld's handler in this process, over a SQLite database: it
// writes a state under a lock, meets another holder's lock as
// kilolock.ErrLocked, lists the states and reads the outputs.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "kilolock-example")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "kl.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	quiet := log.New(io.Discard)
	h := httpbackend.New(kilolock.NewEngine(st, kilolock.Options{Logger: quiet}), httpbackend.Options{Logger: quiet})

	c, err := client.New("http://in-process", client.WithTransport(client.InProcess(h)), client.WithTimeout(time.Minute))
	if err != nil {
		fmt.Println(err)
		return
	}
	info := kilolock.LockInfo{ID: "ci-42", Operation: "OperationTypeApply", Who: "ci@runner", Created: time.Now()}
	if _, err := c.Lock(ctx, "network", info, ""); err != nil {
		fmt.Println(err)
		return
	}
	state := `{"version":4,"terraform_version":"1.9.0","serial":1,"lineage":"net-1","outputs":{"vpc_id":{"value":"vpc-123","type":"string"}},"resources":[]}`
	w, err := c.PutState(ctx, "network", "ci-42", []byte(state))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("wrote version", w.Version)

	_, err = c.Lock(ctx, "network", kilolock.LockInfo{ID: "laptop-1", Operation: "OperationTypeApply", Who: "bob@laptop", Created: time.Now()}, "")
	var locked *kilolock.LockedError
	if errors.Is(err, kilolock.ErrLocked) && errors.As(err, &locked) {
		fmt.Println("locked by", locked.Holder.Who)
	}
	c.Unlock(ctx, "network", info)

	states, err := c.States(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range states.States {
		fmt.Println("state", s.Name)
	}
	f, err := c.Outputs(ctx, "network")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	var doc struct {
		Outputs map[string]struct{ Value any } `json:"outputs"`
	}
	if err := json.NewDecoder(f).Decode(&doc); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("vpc_id =", doc.Outputs["vpc_id"].Value)
	// Output:
	// wrote version 1
	// locked by ci@runner
	// state network
	// vpc_id = vpc-123
}
