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

variable "lambda_dir" {
  description = "The shop's functions as cargo lambda lays them out: <bin>/bootstrap.zip for shop-consumer, shop-publisher, shop-sweeper and shop-recovery."
  type        = string
}

variable "architecture" {
  description = "Lambda architecture of every function (x86_64 for a local build)."
  type        = string
  default     = "arm64"
}
