package graph

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseEnvelope reads the clear part of OpenTofu's envelope: what the
// server guards writes with (serial, lineage) and shows (the key
// providers named by meta), never meta's values.
func TestParseEnvelope(t *testing.T) {
	many := `{`
	for i := range MaxMetaKeys + 3 {
		if i > 0 {
			many += ","
		}
		many += fmt.Sprintf(`"key_provider.pbkdf2.k%02d":"e30="`, i)
	}
	many += `}`
	var manyKeys []string
	for i := range MaxMetaKeys {
		manyKeys = append(manyKeys, fmt.Sprintf("key_provider.pbkdf2.k%02d", i))
	}
	long := strings.Repeat("é", MaxMetaKeyLen) // two bytes a rune
	tests := []struct {
		name string
		doc  string
		want Envelope
	}{
		{"as tofu 1.10 writes it",
			`{"serial":7,"lineage":"3f0c","meta":{"key_provider.pbkdf2.team":"eyJzYWx0IjoiIn0="},"encrypted_data":"YWJj","encryption_version":"v0"}`,
			Envelope{Serial: 7, HasSerial: true, Lineage: "3f0c", Version: "v0", MetaKeys: []string{"key_provider.pbkdf2.team"}}},
		{"two providers and an alias, in document order",
			`{"meta":{"key_provider.aws_kms.prod" : {"a":[1,{"b":"}"}]},"team-key":"e30=","key_provider.pbkdf2.old":null},"encrypted_data":"YWJj","encryption_version":"v0","serial":1,"lineage":"l"}`,
			Envelope{Serial: 1, HasSerial: true, Lineage: "l", Version: "v0", MetaKeys: []string{"key_provider.aws_kms.prod", "team-key", "key_provider.pbkdf2.old"}}},
		{"escaped key", `{"serial":0,"lineage":"l","meta":{"key\u005fprovider.pbkdf2.k":"e30="},"encrypted_data":"YWJj","encryption_version":"v0"}`,
			Envelope{HasSerial: true, Lineage: "l", Version: "v0", MetaKeys: []string{"key_provider.pbkdf2.k"}}},
		{"no serial, no lineage", `{"meta":{},"encrypted_data":"YQ==","encryption_version":"v0"}`,
			Envelope{Version: "v0"}},
		{"null serial", `{"serial":null,"lineage":"","meta":{},"encrypted_data":"YWI=","encryption_version":"v1"}`,
			Envelope{Version: "v1"}},
		{"more keys than kept", `{"serial":2,"lineage":"l","meta":` + many + `,"encrypted_data":"YWJj","encryption_version":"v0"}`,
			Envelope{Serial: 2, HasSerial: true, Lineage: "l", Version: "v0", MetaKeys: manyKeys, MoreMetaKeys: 3}},
		{"a key too long", `{"serial":2,"lineage":"l","meta":{"` + long + `":""},"encrypted_data":"YWJj","encryption_version":"v0"}`,
			Envelope{Serial: 2, HasSerial: true, Lineage: "l", Version: "v0", MetaKeys: []string{long[:MaxMetaKeyLen]}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Envelope
			st, err := ParseWith([]byte(tt.doc), ParseOptions{Envelope: &got})
			if !errors.Is(err, ErrEncrypted) || st != nil {
				t.Fatalf("ParseWith = %v, %v; want ErrEncrypted", st, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("envelope (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseEnvelopeLeftAlone: a plaintext state, or a document that is not
// the envelope, leaves Envelope as it was.
func TestParseEnvelopeLeftAlone(t *testing.T) {
	for _, doc := range []string{
		`{"version":4,"serial":3,"lineage":"l","resources":[]}`,
		`{"serial":1,"lineage":"l","meta":{},"encrypted_data":"YWJj","encryption_version":"v0","resources":[]}`,
	} {
		env := Envelope{Lineage: "untouched"}
		if _, err := ParseWith([]byte(doc), ParseOptions{Envelope: &env}); errors.Is(err, ErrEncrypted) {
			t.Fatalf("%s: ErrEncrypted", doc)
		}
		if env.Lineage != "untouched" || env.MetaKeys != nil {
			t.Errorf("%s: envelope changed to %+v", doc, env)
		}
	}
}

// BenchmarkParseEnvelope parses an 8 MiB envelope, as the engine does for
// every encrypted POST, without and with reading its clear part: reading it
// must cost nothing next to the scan of encrypted_data.
func BenchmarkParseEnvelope(b *testing.B) {
	data := make([]byte, 6<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	doc := []byte(`{"serial":42,"lineage":"3f0c","meta":{"key_provider.pbkdf2.team":"eyJzYWx0IjoiIn0="},"encrypted_data":"` +
		base64.StdEncoding.EncodeToString(data) + `","encryption_version":"v0"}`)
	for _, read := range []bool{false, true} {
		b.Run(fmt.Sprintf("clear_part=%v", read), func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			var env Envelope
			o := ParseOptions{}
			if read {
				o.Envelope = &env
			}
			for b.Loop() {
				if _, err := ParseWith(doc, o); !errors.Is(err, ErrEncrypted) {
					b.Fatal(err)
				}
			}
		})
	}
}
