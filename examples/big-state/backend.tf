# The demo's state on a kld at localhost:8080 (the make targets point a
# copy of this directory at KL_SERVER with -backend-config instead).
terraform {
  backend "http" {
    address        = "http://localhost:8080/v1/states/big-state"
    lock_address   = "http://localhost:8080/v1/states/big-state"
    unlock_address = "http://localhost:8080/v1/states/big-state"
    lock_method    = "LOCK"
    unlock_method  = "UNLOCK"
  }
}
