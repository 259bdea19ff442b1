variable "name" {
  description = "The shop's name: every resource of this root is named after it."
  type        = string
  default     = "shop"
}

variable "region" {
  description = "AWS region."
  type        = string
  default     = "us-east-1"
}

variable "endpoint" {
  description = "A local AWS endpoint (MiniStack) for every service; null for AWS itself."
  type        = string
  default     = null
}

variable "outbox_asset_dir" {
  description = "Directory holding the outbox functions' <bin>/bootstrap.zip (the release artifacts, or a local build)."
  type        = string
}

variable "consumer_zip" {
  description = "The shop consumer's Lambda package (bootstrap.zip)."
  type        = string
}

variable "architecture" {
  description = "Lambda architecture of every function (x86_64 for a local build)."
  type        = string
  default     = "arm64"
}
