variable "parent" { type = string }

resource "terraform_data" "leaf" {
  count = 2
  input = "${var.parent}/leaf${count.index}"
}

output "id" {
  value = terraform_data.leaf[0].id
}
