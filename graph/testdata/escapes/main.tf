# Strings that JSON writers escape differently: HTML characters, U+2028,
# control characters, non-ASCII, in attributes, keys and outputs.
resource "terraform_data" "e" {
  for_each = toset(["é", "日本", "tab\there", "line\u2028sep", "<>&", "new\nline"])
  input = {
    key  = each.key
    html = "<script>alert('&')</script>"
    uni  = "caf\u00e9 \u2029 \u0001 \u007f"
  }
}

output "weird" {
  value = "a\u2028b<c>&d\te"
}
