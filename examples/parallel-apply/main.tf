# Two slow resources in one state, parallel-demo. Terminal A changes a and
# passes b as the state holds it; terminal B does the opposite. On an
# optimistic state both applies run at once and kld merges their writes.

terraform {
  backend "http" {
    address        = "http://localhost:8080/v1/states/parallel-demo"
    lock_address   = "http://localhost:8080/v1/states/parallel-demo"
    unlock_address = "http://localhost:8080/v1/states/parallel-demo"
    lock_method    = "LOCK"
    unlock_method  = "UNLOCK"
  }
}

variable "a" {
  type        = string
  description = "Input of terraform_data.a: a new value replaces it."
}

variable "b" {
  type        = string
  description = "Input of terraform_data.b: a new value replaces it."
}

variable "sleep" {
  type        = number
  default     = 0
  description = "Seconds creating a resource takes."
}

# A provisioner runs only when its resource is created, so triggers_replace
# makes a new input recreate the resource, and the sleep runs again.
resource "terraform_data" "a" {
  input            = var.a
  triggers_replace = var.a

  provisioner "local-exec" {
    command = "sleep ${var.sleep}"
  }
}

resource "terraform_data" "b" {
  input            = var.b
  triggers_replace = var.b

  provisioner "local-exec" {
    command = "sleep ${var.sleep}"
  }
}

output "a" {
  value = terraform_data.a.output
}

output "b" {
  value = terraform_data.b.output
}
