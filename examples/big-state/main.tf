# The demo configuration: two slow resources of one shared state, each in a
# file of its own (slow_a.tf, slow_b.tf), so that `kl apply --orchestrated
# -f slow_a.tf` reserves time_sleep.slow_a and nothing else. A new version
# replaces a resource, and creating it takes slow_seconds.

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
