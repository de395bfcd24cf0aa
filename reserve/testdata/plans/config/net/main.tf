variable "region" {}
variable "upstream" {}
resource "terraform_data" "vpc" {
  input = "${var.region}-${var.upstream}"
}
output "vpc" { value = terraform_data.vpc.id }
