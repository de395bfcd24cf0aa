# One group of the herd: size cheap resources that only hold their input.

variable "group" {
  type = number
}

variable "size" {
  type = number
}

resource "terraform_data" "node" {
  count = var.size
  input = {
    group = var.group
    index = count.index
    name  = format("node-%02d-%05d", var.group, count.index)
  }
}

output "size" {
  value = length(terraform_data.node)
}
