# generate.sh applies with gen=1, then gen=2: the replacement is created
# first (create_before_destroy), its provisioner fails, so it stays tainted
# and the old object stays deposed.
variable "gen" {
  type    = number
  default = 1
}

resource "terraform_data" "d" {
  triggers_replace = var.gen
  input            = "gen-${var.gen}"
  lifecycle {
    create_before_destroy = true
  }
  provisioner "local-exec" {
    command = var.gen > 1 ? "exit 1" : "true"
  }
}
