package reserve

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestDeclared(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("slow_a.tf", `
variable "v" {}
resource "time_sleep" "slow_a" {
  create_duration = "30s"
}
output "a" { value = time_sleep.slow_a.id }
`)
	b := write("herd.tf", `
data "terraform_remote_state" "net" { backend = "local" }
module "herd" {
  source = "./herd"
}
`)
	write("main_override.tf", `resource "x" "y" {}`)
	write("notes.txt", "not configuration")
	j := write("extra.tf.json", `{"resource": {"terraform_data": {"j": {"input": 1}}}}`)

	decls, err := Declared([]string{a, b, j})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range decls {
		got = append(got, filepath.Base(d.File)+":"+d.Pattern.String())
	}
	want := []string{"slow_a.tf:time_sleep.slow_a", "herd.tf:data.terraform_remote_state.net", "herd.tf:module.herd.*", "extra.tf.json:terraform_data.j"}
	if !slices.Equal(got, want) {
		t.Errorf("Declared = %q, want %q", got, want)
	}
	if d, ok := Owner(decls, `module.herd.terraform_data.item["x"]`); !ok || filepath.Base(d.File) != "herd.tf" || d.Line != 3 {
		t.Errorf("Owner = %+v, %v", d, ok)
	}
	if _, ok := Owner(decls, "time_sleep.slow_b"); ok {
		t.Error("an undeclared address has an owner")
	}

	files, err := ConfigFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	if !slices.Equal(names, []string{"extra.tf.json", "herd.tf", "slow_a.tf"}) {
		t.Errorf("ConfigFiles = %q", names)
	}

	bad := write("bad.tf", `resource "x" {`)
	if _, err := Declared([]string{bad}); err == nil {
		t.Error("a file that does not parse was read")
	}
}
