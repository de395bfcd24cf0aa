package inventory

import (
	"bytes"
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		p, name string
		want    bool
	}{
		{"net", "net", true}, {"net", "network", false}, {"net*", "network", true},
		{"*work", "network", true}, {"n*t*k", "network", true}, {"n*x*k", "network", false},
		{"*", "", true}, {"a*a", "a", false}, {"prod-*-db", "prod-eu-db", true},
	} {
		if got := globMatch(tc.p, tc.name); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.p, tc.name, got)
		}
	}
}

func TestLikeOf(t *testing.T) {
	if got, want := likeOf(`ws_a.*%\`), `ws\_a.%\%\\`; got != want {
		t.Errorf("likeOf = %q, want %q", got, want)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	c := Cursor{StateID: 7, InstanceID: `module.a["x"].aws_instance.web[0]`}
	got, err := parseCursor(c.String())
	if err != nil || got != c {
		t.Errorf("parseCursor(%q) = %+v, %v", c.String(), got, err)
	}
	for _, bad := range []string{"", "!!", "e30", c.String() + "x"} {
		if _, err := parseCursor(bad); err == nil {
			t.Errorf("parseCursor(%q) took it", bad)
		}
	}
}

func TestIdentity(t *testing.T) {
	for _, tc := range []struct{ obj, key, value string }{
		{`{"identity":{"region":"eu","id":"b"},"attributes":{"id":"x","arn":"a"}}`, "identity", `{"id":"b","region":"eu"}`},
		{`{"attributes":{"id":"x","arn":"arn:1"}}`, "arn", "arn:1"},
		{`{"attributes":{"id":"x","self_link":"https://l"}}`, "self_link", "https://l"},
		{`{"attributes":{"id":"x","arn":""}}`, "id", "x"},
		{`{"attributes":{"id":"s3cr3t-value-1234"},"sensitive_attributes":[[{"type":"get_attr","value":"id"}]]}`, "", ""},
		{`{"attributes":{}}`, "", ""},
	} {
		k, v, ok := Identity([]byte(tc.obj))
		if k != tc.key || v != tc.value || ok != (tc.key != "") {
			t.Errorf("Identity(%s) = %q %q %v", tc.obj, k, v, ok)
		}
		// What a store records: the key and a hash of the value, for a
		// managed object that is not deposed only.
		if k, h := IdentityKey("managed", "t", "", []byte(tc.obj)); k != tc.key || (len(h) == 16) != (tc.key != "") {
			t.Errorf("IdentityKey(%s) = %q %x", tc.obj, k, h)
		}
		for _, other := range [][2]string{{"data", ""}, {"managed", "00000001"}} {
			if k, h := IdentityKey(other[0], "t", other[1], []byte(tc.obj)); k != "" || h != nil {
				t.Errorf("IdentityKey(%s, %q, %s) = %q %x, want none", other[0], other[1], tc.obj, k, h)
			}
		}
	}
	// Equal identities hash equal; another value, key or type does not.
	_, a := IdentityKey("managed", "t", "", []byte(`{"attributes":{"id":"x"}}`))
	_, b := IdentityKey("managed", "t", "", []byte(`{"attributes":{"id":"x","ami":"other"}}`))
	_, c := IdentityKey("managed", "t", "", []byte(`{"attributes":{"id":"y"}}`))
	_, d := IdentityKey("managed", "t", "", []byte(`{"attributes":{"id":"y","arn":"x"}}`))
	_, e := IdentityKey("managed", "u", "", []byte(`{"attributes":{"id":"x"}}`))
	if !bytes.Equal(a, b) || bytes.Equal(a, c) || bytes.Equal(c, d) || bytes.Equal(a, e) {
		t.Errorf("hashes of t x, t x, t y, t arn x, u x: %x %x %x %x %x", a, b, c, d, e)
	}
}

// SearchText holds every key and scalar value a search by text reads,
// lowercased, in key order, and no sensitive value: a text any of them
// holds is in it, a secret is not.
func TestSearchText(t *testing.T) {
	for _, tc := range []struct{ obj, want string }{
		{`{"attributes":{"id":"I-1","tags":{"Name":"Web"},"ports":[80,true,null],"n":1.50}}`, "id\ni-1\nn\n1.50\nports\n80\ntrue\ntags\nname\nweb\n"},
		{`{"attributes":{"host":"db.internal","password":"hunter2-secret"},"sensitive_attributes":[[{"type":"get_attr","value":"password"}]]}`, "host\ndb.internal\npassword\n"},
		{`{"attributes":"scalar"}`, ""},
		{`{"attributes":{}}`, ""},
		{`not json`, ""},
	} {
		if got := SearchText([]byte(tc.obj)); got != tc.want {
			t.Errorf("SearchText(%s) = %q, want %q", tc.obj, got, tc.want)
		}
	}
}

// Record, what a commit records, is IdentityKey and SearchText of the
// same object, masked once.
func TestRecord(t *testing.T) {
	for _, obj := range []string{
		`{"attributes":{"id":"i-1","tags":{"Name":"Web"}}}`,
		`{"attributes":{"id":"hunter2-secret","host":"db"},"sensitive_attributes":[[{"type":"get_attr","value":"id"}]]}`,
		`{"identity":{"account":"1","name":"b"},"attributes":{"arn":"arn:x","id":"b"}}`,
		`not json`,
	} {
		for _, m := range [][2]string{{"managed", ""}, {"data", ""}, {"managed", "00000001"}} {
			key, hash, text := Record(m[0], "t", m[1], []byte(obj))
			wantKey, wantHash := IdentityKey(m[0], "t", m[1], []byte(obj))
			if key != wantKey || !bytes.Equal(hash, wantHash) || text != SearchText([]byte(obj)) {
				t.Errorf("Record(%s, %s, %q) = %q %x %q, want %q %x %q", m[0], obj, m[1], key, hash, text, wantKey, wantHash, SearchText([]byte(obj)))
			}
		}
	}
}

// BenchmarkSearchText is what a commit spends on each object it writes
// for the text index: about 300 bytes of attributes, as
// storetest.BenchInventory's.
func BenchmarkSearchText(b *testing.B) {
	obj := []byte(`{"schema_version":0,"attributes":{"id":"aws_instance-0500-00008","ami":"ami-008","tags":{"Name":"web-8","team":"team-0"},"subnet_id":"subnet-0500","user_data":"` +
		strings.Repeat("x", 150) + `"},"sensitive_attributes":[]}`)
	for b.Loop() {
		SearchText(obj)
	}
}
