package sqlite_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/store/sqlstore"
)

// TestVerifyBackupPieces: kl backup's read-back (sqlstore.VerifyBackup)
// reads a backup whose long values are written in pieces, as a restore
// would, and refuses one that lost a piece.
func TestVerifyBackupPieces(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	body, _ := json.Marshal(strings.Repeat("é😀x", 40_000))
	in, err := graph.NewInstance(graph.Resource{Mode: "managed", Type: "aws_s3_object", Name: "wide", Provider: `provider["registry.opentofu.org/hashicorp/aws"]`},
		[]byte(`{"schema_version":0,"attributes":{"body":`+string(body)+`},"sensitive_attributes":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	c := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: "l", TerraformVersion: "1.10.10", Source: kilolock.SourcePush, Actor: "t", Format: "compact"},
		Upserts: []graph.Instance{in}}
	if _, _, err := s.Commit(ctx, "long", c); err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	sum, err := s.Backup(ctx, &file)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sqlstore.VerifyBackup(bytes.NewReader(file.Bytes()))
	if err != nil || !cmp.Equal(got.Tables, sum.Tables) {
		t.Fatalf("VerifyBackup = %+v, %v; want the backup's tables %+v", got, err, sum.Tables)
	}

	zr, err := gzip.NewReader(&file)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	dropped := false
	for _, line := range bytes.Split(plain, []byte("\n")) {
		if !dropped && bytes.HasPrefix(line, []byte(`"`)) {
			dropped = true
			continue
		}
		kept = append(kept, line)
	}
	if !dropped {
		t.Fatal("the backup has no piece: the value was not written in pieces")
	}
	var cut bytes.Buffer
	zw := gzip.NewWriter(&cut)
	zw.Write(bytes.Join(kept, []byte("\n")))
	zw.Close()
	_, err = sqlstore.VerifyBackup(&cut)
	var ie *kilolock.InvalidError
	if !errors.As(err, &ie) || ie.Code != "backup_malformed" {
		t.Errorf("VerifyBackup of a backup that lost a piece = %v, want backup_malformed", err)
	}
}

// TestCopyBackup: CopyBackup copies the backup write streams and reads it
// back as it goes; a backup cut short is refused once copied, and write's
// own error is returned as it is.
func TestCopyBackup(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	if _, _, err := s.Commit(ctx, "copied", &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: "l", TerraformVersion: "1.10.10",
		Source: kilolock.SourcePush, Actor: "t", Format: "compact"}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sum, err := sqlstore.CopyBackup(&out, func(w io.Writer) error { _, err := s.Backup(ctx, w); return err })
	if err != nil {
		t.Fatal(err)
	}
	again, err := sqlstore.VerifyBackup(bytes.NewReader(out.Bytes()))
	if err != nil || !cmp.Equal(again.Tables, sum.Tables) || sum.Rows() == 0 {
		t.Fatalf("the copy reads back as %+v, %v; CopyBackup said %+v", again, err, sum)
	}

	half := out.Bytes()[:out.Len()/2]
	var cut bytes.Buffer
	_, err = sqlstore.CopyBackup(&cut, func(w io.Writer) error { _, err := w.Write(half); return err })
	var ie *kilolock.InvalidError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "not whole") || !bytes.Equal(cut.Bytes(), half) {
		t.Errorf("CopyBackup of half a backup = %v (copied %d of %d bytes), want an InvalidError saying it is not whole", err, cut.Len(), len(half))
	}

	reset := errors.New("connection reset")
	if _, err := sqlstore.CopyBackup(io.Discard, func(w io.Writer) error { w.Write(half[:10]); return reset }); err != reset {
		t.Errorf("CopyBackup of a download that failed = %v, want its error %v", err, reset)
	}
}
