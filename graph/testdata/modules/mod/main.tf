variable "name" { type = string }
variable "root" { type = string }

resource "terraform_data" "this" {
  input = "${var.root}/${var.name}"
}

module "child" {
  source = "./child"
  parent = terraform_data.this.output
}

output "id" {
  value = module.child.id
}
