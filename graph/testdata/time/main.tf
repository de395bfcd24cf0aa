# A real provider (hashicorp/time from the local filesystem mirror).
terraform {
  required_providers {
    time = {
      source  = "hashicorp/time"
      version = "0.14.2"
    }
  }
}

resource "time_static" "t" {}

resource "time_offset" "o" {
  offset_days = 1
  base_rfc3339 = time_static.t.rfc3339
}

resource "time_rotating" "r" {
  rotation_days = 30
  rfc3339       = time_static.t.rfc3339
}

resource "time_sleep" "s" {
  create_duration = "1ms"
  triggers = {
    at = time_static.t.unix
  }
}

output "expires" {
  value = time_offset.o.rfc3339
}
