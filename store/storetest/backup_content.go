package storetest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/retention"
)

// Marks of the objects an altered backup edits.
const (
	editedInstance = "edit-me"
	editedOutput   = "edit-me-too"
)

// fillLong gives s values longer than a backup writes inline, which it
// writes in pieces: an instance object of UTF-8 whose pieces are cut
// inside characters, one that is not UTF-8, and a kept document of bytes;
// and the objects an altered backup edits.
func fillLong(t *testing.T, s kilolock.Store) {
	t.Helper()
	c := next(t, s, "long")
	wide := strings.Repeat("é😀x", 40_000) // 280 kB: cuts at 64 KiB fall inside characters
	c.Upserts = []graph.Instance{
		instance(t, resource("aws_s3_object", "wide"), graph.IndexKey{}, `{"id":"wide","body":`+quote(wide)+`}`),
		newInstance(t, resource("aws_s3_object", "latin1"), []byte("{\"schema_version\":0,\"attributes\":{\"id\":\"caf\xe9"+strings.Repeat("\xff\xfeab", 30_000)+"\"},\"sensitive_attributes\":[]}")),
	}
	c.OutputUpserts = []graph.Output{output("wide", wide, false)}
	raw := make([]byte, 150_000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	c.Raw = raw
	commit(t, s, "long", c)

	c = next(t, s, "plain")
	c.Upserts = []graph.Instance{instance(t, resource("aws_instance", "web"), graph.IndexKey{}, `{"id":"`+editedInstance+`","ami":"ami-1"}`)}
	c.OutputUpserts = []graph.Output{output("ip", editedOutput, false)}
	commit(t, s, "plain", c)
}

// checkBackupLines checks that no line of file is longer than a restore's
// default limit says a backup writes: an eighth of it.
func checkBackupLines(t *testing.T, file []byte) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(file))
	must(t, err)
	br := bufio.NewReader(zr)
	longest, pieces := 0, 0
	for {
		line, err := br.ReadBytes('\n')
		longest = max(longest, len(line))
		if bytes.HasPrefix(line, []byte(`"`)) {
			pieces++
		}
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
	}
	if longest > retention.DefaultMaxBackupLine/8 {
		t.Errorf("the backup has a line of %d bytes; a backup writes none longer than %d", longest, retention.DefaultMaxBackupLine/8)
	}
	if pieces < 10 {
		t.Errorf("the backup has %d lines of pieces: the long values were not written in pieces", pieces)
	}
}

// testRestoreRefusals: a restore of a backup whose objects were edited,
// of a line or a value past its limits, or of pieces that do not add up,
// is refused with a code that says so, and writes nothing.
func testRestoreRefusals(t *testing.T, to Opener, file []byte) {
	ctx := context.Background()
	empty := to(t)
	for _, tt := range []struct {
		name string
		data io.Reader
		lim  retention.RestoreLimits
		code string
	}{
		{"an edited instance object", bytes.NewReader(alteredBackup(t, file, "payloads", func(row map[string]any) bool {
			return replaceCell(row, "body", `"`+editedInstance+`"`, `"edited"`)
		})), retention.RestoreLimits{}, "backup_content_mismatch"},
		{"an edited output", bytes.NewReader(alteredBackup(t, file, "payloads", func(row map[string]any) bool {
			return replaceCell(row, "body", editedOutput, "edited")
		})), retention.RestoreLimits{}, "backup_content_mismatch"},
		{"an interval naming another object", bytes.NewReader(alteredBackup(t, file, "instance_intervals", func(row map[string]any) bool {
			if row["name"] != "web" {
				return false
			}
			row["hash"] = strings.Repeat("A", 43) + "="
			return true
		})), retention.RestoreLimits{}, "backup_content_mismatch"},
		{"pieces that do not add up", bytes.NewReader(alteredBackup(t, file, "version_raw", func(row map[string]any) bool {
			p, ok := row["raw"].(map[string]any)
			if ok {
				p["bytes"] = json.Number("150001")
			}
			return ok
		})), retention.RestoreLimits{}, "backup_malformed"},
		{"a value past the limit", bytes.NewReader(file), retention.RestoreLimits{MaxValue: 100 << 10}, "backup_value_too_large"},
		{"a line past a small limit", bytes.NewReader(file), retention.RestoreLimits{MaxLine: 16 << 10}, "backup_line_too_long"},
		{"a line of 256 MiB past the default limit", hugeLine(t, 256<<20), retention.RestoreLimits{}, "backup_line_too_long"},
	} {
		_, err := backupStore(t, empty).Restore(ctx, tt.data, tt.lim)
		var ie *kilolock.InvalidError
		if !errors.As(err, &ie) || ie.Code != tt.code || !errors.Is(err, kilolock.ErrInvalid) || ie.Hint == "" {
			t.Errorf("%s: Restore = %v, want an *InvalidError %s with a hint", tt.name, err, tt.code)
		}
	}
	if sts, err := empty.States(ctx); err != nil || len(sts) != 0 {
		t.Fatalf("refused restores left states %+v, %v", sts, err)
	}
	if _, err := backupStore(t, empty).Restore(ctx, bytes.NewReader(file), retention.RestoreLimits{}); err != nil {
		t.Errorf("the whole file into the store the refused restores left: %v (they must write nothing)", err)
	}
}

// replaceCell replaces old with new in row's text column, reporting
// whether it held old.
func replaceCell(row map[string]any, column, old, new string) bool {
	s, ok := row[column].(string)
	if !ok || !strings.Contains(s, old) {
		return false
	}
	row[column] = strings.Replace(s, old, new, 1)
	return true
}

// alteredBackup returns file with the first row of table that edit
// changes (given each row's cells by column, numbers as json.Number)
// written as edit left it, compressed again: what someone who edits a
// backup by hand makes.
func alteredBackup(t testing.TB, file []byte, table string, edit func(row map[string]any) bool) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(file))
	must(t, err)
	plain, err := io.ReadAll(zr)
	must(t, err)
	lines := bytes.Split(plain, []byte("\n"))
	var h struct {
		Tables []struct {
			Name    string
			Columns []struct{ Name string }
		}
	}
	must(t, json.Unmarshal(lines[0], &h))
	var columns []string
	for _, ht := range h.Tables {
		if ht.Name == table {
			for _, c := range ht.Columns {
				columns = append(columns, c.Name)
			}
		}
	}
	in, done := false, false
	for i, line := range lines[1:] {
		switch {
		case bytes.Equal(line, []byte(`{"table":"`+table+`"}`)):
			in = true
		case !in || done || !bytes.HasPrefix(line, []byte("[")):
		default:
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			var cells []any
			must(t, dec.Decode(&cells))
			row := map[string]any{}
			for j, c := range columns {
				row[c] = cells[j]
			}
			if !edit(row) {
				continue
			}
			for j, c := range columns {
				cells[j] = row[c]
			}
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			must(t, enc.Encode(cells))
			lines[i+1], done = bytes.TrimSuffix(b.Bytes(), []byte("\n")), true
		}
	}
	if !done {
		t.Fatalf("no row of %s to edit in the backup", table)
	}
	return gzipped(t, string(bytes.Join(lines, []byte("\n"))))
}

// hugeLine streams a backup whose second line is n bytes long, compressed
// as it is read: a file of a few hundred kilobytes that a restore must
// refuse without holding the line. The stream ends when the test does.
func hugeLine(t testing.TB, n int64) io.Reader {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pr.Close() })
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		_, err := io.WriteString(zw, `{"kilolock_backup":2,"created":"2026-01-01T00:00:00Z","tables":[{"name":"state_holds","columns":[{"name":"name","type":"text"},{"name":"lifecycle","type":"text"}]}]}`+"\n"+
			`{"table":"state_holds"}`+"\n"+`["`)
		block := bytes.Repeat([]byte("a"), 1<<20)
		for written := int64(0); err == nil && written < n; written += int64(len(block)) {
			_, err = zw.Write(block)
		}
		if err == nil {
			_, err = io.WriteString(zw, `","active"]`+"\n")
		}
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}
