# The configuration the plan fixtures are made from (generate.sh).
variable "slow_a_version" { default = "v1" }
variable "slow_b_version" { default = "v1" }
variable "reader_version" { default = "v1" }
variable "regions" {
  type    = list(string)
  default = ["eu", "us"]
}

resource "time_sleep" "slow_a" {
  create_duration = "1ms"
  triggers        = { version = var.slow_a_version }
}

resource "time_sleep" "slow_b" {
  create_duration = "1ms"
  triggers        = { version = var.slow_b_version }
}

# Reads slow_b; changes only with reader_version.
resource "terraform_data" "reader" {
  input            = time_sleep.slow_b.id
  triggers_replace = [var.reader_version]
}

# Reads slow_a through a module input variable.
module "net" {
  source   = "./net"
  for_each = toset(var.regions)
  region   = each.key
  upstream = time_sleep.slow_a.id
}

output "a_id" { value = time_sleep.slow_a.id }
