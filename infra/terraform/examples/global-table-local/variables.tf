variable "endpoint" {
  description = "The local AWS, e.g. https://127.0.0.1:4566 (scripts/emulator start prints it; trust its certificate with `scripts/emulator trust`)."
  type        = string

  validation {
    condition     = can(regex("^https?://(127\\.0\\.0\\.1|localhost)(:[0-9]+)?/?$", var.endpoint))
    error_message = "This root deploys only to a local AWS on loopback; use examples/global-table for an account."
  }
}

variable "regions" {
  description = "The global table's two regions: the first creates the table (and is the default home region unless default_home_region says otherwise), the second holds its replica."
  type        = list(string)
  default     = ["us-east-1", "eu-west-1"]
  validation {
    condition     = length(var.regions) == 2 && length(distinct(var.regions)) == 2
    error_message = "regions must be two different regions."
  }
}

variable "default_home_region" {
  description = "Home region of outbox items without HomeRegion, the same in both regions. null: the first of regions."
  type        = string
  default     = null
}

variable "prefix" {
  description = "Prefix of every physical name (several deployments can share one local AWS)."
  type        = string
  default     = "outbox"
}

variable "lambda_asset_dir" {
  description = "Directory holding <bin>/bootstrap.zip (scripts/package writes target/lambda; --debug builds for the local AWS)."
  type        = string
  default     = "../../../../target/lambda"
}

variable "architecture" {
  description = "Architecture of the packages in lambda_asset_dir: x86_64 for scripts/package's default and --debug builds on this machine."
  type        = string
  default     = "x86_64"
}

variable "sweep_grace_seconds" {
  description = "OUTBOX_SWEEP_GRACE_SECONDS for both regions' sweepers."
  type        = number
  default     = 60
}
