# count, for_each (keys needing escapes), references, depends_on,
# create_before_destroy and outputs of several types.
resource "terraform_data" "single" {
  input = "hello"
}

resource "terraform_data" "counted" {
  count = 3
  input = "item-${count.index}"
  depends_on = [terraform_data.single]
}

resource "terraform_data" "each" {
  for_each = toset(["a b", "x\"y", "plain", "back\\slash", "<tag>&amp"])
  input    = { key = each.key, ref = terraform_data.single.output }
}

resource "terraform_data" "cbd" {
  input = terraform_data.counted[0].output
  lifecycle {
    create_before_destroy = true
  }
}

output "string" {
  value = terraform_data.single.output
}

output "number" {
  value = 42.5
}

output "bool" {
  value = true
}

output "list" {
  value = [for c in terraform_data.counted : c.output]
}

output "map" {
  value = { for k, v in terraform_data.each : k => v.output.key }
}

output "object" {
  value = { name = "x", n = 1, nested = { ok = false, items = [1, 2] } }
}

# A null output is not stored at all.
output "nothing" {
  value = null
}

output "secret" {
  value     = "s3cr3t"
  sensitive = true
}
