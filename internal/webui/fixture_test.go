package webui_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store/postgres"
	"github.com/kilolock/kilolock/store/sqlite"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// stores opens a fresh store of each kind; the pages read history,
// rejections and instance intervals through each store's own SQL.
var stores = []struct {
	name string
	open func(t testing.TB) kilolock.Store
}{
	{"sqlite", func(t testing.TB) kilolock.Store {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kilolock.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
	{"postgres", func(t testing.TB) kilolock.Store {
		st, err := postgres.Open(context.Background(), testpg.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

// netDoc is the known state "net": two web servers (web[0]'s password
// sensitive), a DNS record resting on a subnet of module.net, which rests
// on the web servers.
func netDoc(serial int, ami1, password0, wwwID, cidr string) []byte {
	return fmt.Appendf(nil, `{"version":4,"terraform_version":"1.10.10","serial":%d,"lineage":"net-lineage","outputs":{},"resources":[
{"mode":"managed","type":"aws_instance","name":"web","provider":"provider[\"registry.opentofu.org/hashicorp/aws\"]","instances":[
 {"index_key":0,"schema_version":0,"attributes":{"id":"i-0","ami":"ami-blue","password":%q},"sensitive_attributes":[[{"type":"get_attr","value":"password"}]]},
 {"index_key":1,"schema_version":0,"attributes":{"id":"i-1","ami":%q,"password":"plain"},"sensitive_attributes":[]}]},
{"mode":"managed","type":"aws_route53_record","name":"www","provider":"provider[\"registry.opentofu.org/hashicorp/aws\"]","instances":[
 {"schema_version":0,"attributes":{"id":%q},"sensitive_attributes":[],"dependencies":["module.net.aws_subnet.public"]}]},
{"module":"module.net","mode":"managed","type":"aws_subnet","name":"public","provider":"provider[\"registry.opentofu.org/hashicorp/aws\"]","instances":[
 {"schema_version":0,"attributes":{"id":"subnet-1","cidr":%q},"sensitive_attributes":[],"dependencies":["aws_instance.web"]}]}],
"check_results":null}
`, serial, password0, ami1, wwwID, cidr)
}

// The secrets of the known state: no page may show them.
const (
	secretBefore = "swordfish-0"
	secretAfter  = "swordfish-1"
)

// seedNet writes the known history of state "net":
//
//	@1 apply by alice          the first version
//	@2 apply by bob            web[1].ami green → purple, web[0]'s password changed
//	(optimistic from here)
//	@3 apply by carol          www's id
//	@4 merge of dave's write   the subnet's cidr, written from @2
//	a rejected commit by erin  www's id again, from @4, after frank's
//	@5 apply by frank          www's id
//
// and leaves a lock held by "gina@laptop" (an apply in flight).
func seedNet(t testing.TB, e *kilolock.Engine) {
	t.Helper()
	ctx := context.Background()
	lock := func(id, who string) {
		t.Helper()
		if _, err := e.Lock(ctx, "net", kilolock.LockInfo{ID: id, Who: who, Operation: "OperationTypeApply", Version: "1.10.10", Created: time.Now().UTC()}); err != nil {
			t.Fatalf("lock %s: %v", id, err)
		}
	}
	write := func(lockID string, doc []byte) error {
		t.Helper()
		_, err := e.Write(ctx, "net", doc, kilolock.WriteOptions{LockID: lockID})
		return err
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	unlock := func(id string) {
		t.Helper()
		_, err := e.Unlock(ctx, "net", id, false)
		must(err)
	}
	lock("l1", "alice@laptop")
	must(write("l1", netDoc(1, "ami-green", secretBefore, "www-1", "10.0.1.0/24")))
	unlock("l1")
	lock("l2", "bob@laptop")
	must(write("l2", netDoc(2, "ami-purple", secretAfter, "www-1", "10.0.1.0/24")))
	unlock("l2")
	must(e.SetLockMode(ctx, "net", kilolock.LockOptimistic))
	lock("l3", "carol@ci")
	lock("l4", "dave@ci")
	must(write("l3", netDoc(3, "ami-purple", secretAfter, "www-3", "10.0.1.0/24")))
	must(write("l4", netDoc(3, "ami-purple", secretAfter, "www-1", "10.0.9.0/24")))
	unlock("l3")
	unlock("l4")
	lock("l5", "erin@ci")
	lock("l6", "frank@ci")
	must(write("l6", netDoc(5, "ami-purple", secretAfter, "www-6", "10.0.9.0/24")))
	var ce *kilolock.ConflictError
	if err := write("l5", netDoc(5, "ami-purple", secretAfter, "www-5", "10.0.9.0/24")); !errors.As(err, &ce) {
		t.Fatalf("erin's write = %v, want a conflict", err)
	}
	unlock("l5")
	unlock("l6")
	lock("l7", "gina@laptop")
}

// server serves e as kld does, with o.
func server(t testing.TB, e *kilolock.Engine, o httpbackend.Options) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(httpbackend.New(e, o))
	t.Cleanup(srv.Close)
	return srv
}
