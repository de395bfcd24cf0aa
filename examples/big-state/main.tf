# The demo configuration of state big-state (backend.tf): two slow
# resources, time_sleep.slow_a and time_sleep.slow_b, and a herd of
# var.herd_size cheap ones (herd/, terraform_data: no cloud, no provider
# to download). A new slow_a_version or slow_b_version replaces that slow
# resource, and creating it takes slow_seconds; the herd does not change.
# `make demo-warm` restores a state that matches this configuration.

resource "time_sleep" "slow_a" {
  create_duration = "${var.slow_seconds}s"
  triggers = {
    version = var.slow_a_version
  }
}

resource "time_sleep" "slow_b" {
  create_duration = "${var.slow_seconds}s"
  triggers = {
    version = var.slow_b_version
  }
}

# herd_groups modules of herd_size / herd_groups resources each.
module "herd" {
  source = "./herd"
  count  = var.herd_groups
  group  = count.index
  size   = floor(var.herd_size / var.herd_groups)
}

variable "slow_a_version" {
  type    = string
  default = "v1"
}

variable "slow_b_version" {
  type    = string
  default = "v1"
}

variable "slow_seconds" {
  type        = number
  default     = 30
  description = "Seconds creating a slow resource takes."
}

variable "herd_size" {
  type        = number
  default     = 10000
  description = "Resources in the herd, across herd_groups modules (a multiple of it)."
}

variable "herd_groups" {
  type        = number
  default     = 10
  description = "Modules the herd is split into."
}

output "herd_size" {
  value = sum([for m in module.herd : m.size])
}
