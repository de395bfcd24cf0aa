package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/postgres"
)

// Open a store, take Terraform's lock and ask the database what it holds.
// (Not run by go test: it needs a server at KL_DATABASE_URL.)
func ExampleOpen() {
	ctx := context.Background()
	st, err := postgres.Open(ctx, os.Getenv("KL_DATABASE_URL"), postgres.WithQueryTimeout(10*time.Second))
	if errors.Is(err, kilolock.ErrUnavailable) {
		fmt.Println("database unavailable; retry later:", err)
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	info := kilolock.LockInfo{ID: "5f3c…", Operation: "OperationTypeApply", Who: "alice@laptop"}
	if _, err := st.Lock(ctx, "network", info, kilolock.LockOptions{Mode: kilolock.LockExclusive}); err != nil {
		var locked *kilolock.LockedError
		if errors.As(err, &locked) {
			fmt.Println("held by", locked.Holder.Who)
		}
		return
	}
	res, err := st.Query(ctx, kilolock.QueryLimits{}, `SELECT address, attributes ->> 'id' FROM resources WHERE state = $1 ORDER BY address`, "network")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, row := range res.Rows {
		fmt.Println(row...)
	}
}
