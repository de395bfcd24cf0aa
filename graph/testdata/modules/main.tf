# Nested modules with count and for_each module instances.
resource "terraform_data" "root" {
  input = "root"
}

module "a" {
  source   = "./mod"
  for_each = toset(["x", "y z"])
  name     = each.key
  root     = terraform_data.root.output
}

module "b" {
  source = "./mod"
  count  = 2
  name   = "b${count.index}"
  root   = terraform_data.root.output
}

output "a_ids" {
  value = { for k, m in module.a : k => m.id }
}
