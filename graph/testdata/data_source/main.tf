# A data source without a provider download: the builtin
# terraform_remote_state reading another local state file.
data "terraform_remote_state" "basic" {
  backend = "local"
  config = {
    path = "${path.module}/other.tfstate"
  }
}

resource "terraform_data" "uses" {
  input = data.terraform_remote_state.basic.outputs.string
}

output "remote_list" {
  value = data.terraform_remote_state.basic.outputs.list
}
