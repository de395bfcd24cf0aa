resource "time_sleep" "slow_b" {
  create_duration = "${var.slow_seconds}s"
  triggers = {
    version = var.slow_b_version
  }
}
