package httpbackend_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/store"
)

// Serve an engine on SQLite and drive it as Terraform does: LOCK, GET (404
// is an empty state), a second apply's LOCK (423: plans would share it),
// UNLOCK.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "kilolock-example")
	defer os.RemoveAll(dir)
	st, err := store.Open(context.Background(), filepath.Join(dir, "kilolock.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	srv := httptest.NewServer(httpbackend.New(kilolock.NewEngine(st, kilolock.Options{}), httpbackend.Options{}))
	defer srv.Close()

	send := func(method, body string) {
		req, _ := http.NewRequest(method, srv.URL+"/v1/states/prod", strings.NewReader(body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		res.Body.Close()
		fmt.Println(method, res.Status)
	}
	send("LOCK", `{"ID":"1b2c","Operation":"OperationTypeApply","Who":"alice@laptop"}`)
	send("GET", "")
	send("LOCK", `{"ID":"9f8e","Operation":"OperationTypeApply","Who":"bob@ci"}`)
	send("LOCK", `{"ID":"5a6b","Operation":"OperationTypePlan","Who":"carol@ci"}`) // plans never wait
	send("UNLOCK", `{"ID":"1b2c","Operation":"OperationTypeApply","Who":"alice@laptop"}`)
	// Output:
	// LOCK 200 OK
	// GET 404 Not Found
	// LOCK 423 Locked
	// LOCK 200 OK
	// UNLOCK 200 OK
}
