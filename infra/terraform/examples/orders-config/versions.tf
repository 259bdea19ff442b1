# Provider-free on purpose, as the outbox module's config.tf is: the orders example's names,
# table shape, routes, queue settings, consumer settings, policy and alarms, checked
# offline by `terraform test`. ../orders creates the resources from them.
terraform {
  required_version = ">= 1.9.0"
}
