package webui_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
)

// TestBrowserEncryptedState: the pages show that a state is client-side
// encrypted and by which key providers (never the meta's material), that
// it requires encryption, and compare its versions as whole documents, on
// each store.
func TestBrowserEncryptedState(t *testing.T) {
	const salt = "eyJzYWx0IjoiU0VDUkVUX1NBTFQifQ==" // {"salt":"SECRET_SALT"}
	envelope := func(serial, data string) []byte {
		return []byte(`{"serial":` + serial + `,"lineage":"net-lineage","meta":{"key_provider.pbkdf2.team":"` + salt + `"},"encrypted_data":"` + data + `","encryption_version":"v0"}`)
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			e := kilolock.NewEngine(st.open(t), kilolock.Options{})
			for _, doc := range [][]byte{netDoc(1, "ami-green", secretBefore, "www-1", "10.0.1.0/24"), envelope("2", "c2VjcmV0"), envelope("3", "bW9yZQ==")} {
				if _, err := e.Write(ctx, "vault", doc, kilolock.WriteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.SetRequireClientEncryption(ctx, "vault", true); err != nil {
				t.Fatal(err)
			}
			srv := server(t, e, httpbackend.Options{})
			b := newBrowser(t)

			b.open(srv.URL + "/ui/")
			row := b.text(`#states tr[data-state="vault"]`)
			for _, want := range []string{"@3", "client-side", "pbkdf2.team", "required"} {
				if !strings.Contains(row, want) {
					t.Errorf("states row %q lacks %q", row, want)
				}
			}

			b.open(srv.URL + "/ui/states/vault")
			if enc := b.text("#encryption"); !strings.Contains(enc, "client-side encrypted by OpenTofu (v0): key providers pbkdf2.team") || !strings.Contains(enc, "plaintext writes are refused") {
				t.Errorf("the state's encryption line = %q", enc)
			}
			if got := b.attrs("#timeline li.version", "data-version"); !slices.Equal(got, []string{"3", "2", "1"}) {
				t.Errorf("timeline versions = %v", got)
			}
			if v3 := b.text(`#timeline li[data-version="3"]`); !strings.Contains(v3, "serial 3") || !strings.Contains(v3, "client-side encrypted") {
				t.Errorf("version 3 on the timeline = %q, want its serial and that it is encrypted", v3)
			}

			b.open(srv.URL + "/ui/states/vault/diff?from=@2&to=@3")
			if got := b.text("#opaque"); !strings.Contains(got, "client-side encrypted") || !strings.Contains(got, "they differ") {
				t.Errorf("diff of two encrypted versions = %q", got)
			}
			b.open(srv.URL + "/ui/states/vault/diff?from=@3&to=@latest")
			if got := b.text("#opaque"); !strings.Contains(got, "identical") {
				t.Errorf("diff of a version with itself = %q", got)
			}
			html := get(b, "page HTML", chromedp.Evaluate[string]("document.documentElement.outerHTML"))
			if strings.Contains(html, "SECRET_SALT") || strings.Contains(html, salt) {
				t.Errorf("a page shows the meta's material")
			}
			b.checkConsole("the encrypted state's pages")
		})
	}
}
