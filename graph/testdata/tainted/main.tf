# generate.sh runs `tofu taint 'terraform_data.t["b"]'` after apply.
resource "terraform_data" "t" {
  for_each = toset(["a", "b"])
  input    = each.key
}
