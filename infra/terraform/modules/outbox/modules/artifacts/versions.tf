# Provider-free: the function code is checked at plan from the files alone, for the
# outbox's functions (the module above) and for any other function built with cargo
# lambda (the orders example's consumer).
terraform {
  required_version = ">= 1.9.0"
}
