# Check blocks, postconditions and output preconditions make check_results
# non-null; one assertion fails (a warning) so failure messages are kept.
resource "terraform_data" "c" {
  input = 3
  lifecycle {
    postcondition {
      condition     = self.output == 3
      error_message = "output must be 3"
    }
  }
}

check "health" {
  assert {
    condition     = terraform_data.c.output > 1
    error_message = "too small"
  }
}

check "failing" {
  assert {
    condition     = terraform_data.c.output > 10
    error_message = "needs to be more than 10, got ${terraform_data.c.output}"
  }
}

output "checked" {
  value = terraform_data.c.output
  precondition {
    condition     = terraform_data.c.output != null
    error_message = "missing"
  }
}
