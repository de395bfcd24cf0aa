resource "time_sleep" "slow_a" {
  create_duration = "${var.slow_seconds}s"
  triggers = {
    version = var.slow_a_version
  }
}
