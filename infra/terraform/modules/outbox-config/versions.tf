# Provider-free on purpose: names, the stream filter, table shape, mapping
# settings and IAM policy documents are computed here, so `terraform test`
# checks them offline. modules/outbox uses this module for every shared value.
terraform {
  required_version = ">= 1.9.0"
}
