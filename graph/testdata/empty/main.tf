# generate.sh applies, then destroys: the state has no resources and no
# outputs but keeps its lineage and a serial.
resource "terraform_data" "gone" {
  input = "x"
}

output "gone" {
  value = terraform_data.gone.output
}
