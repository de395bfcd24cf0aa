# Sensitive values inside attributes give non-empty sensitive_attributes.
variable "password" {
  type      = string
  default   = "hunter2"
  sensitive = true
}

resource "terraform_data" "s" {
  input = {
    user     = "admin"
    password = var.password
    list     = ["a", var.password]
  }
}

output "password" {
  value     = terraform_data.s.output.password
  sensitive = true
}
