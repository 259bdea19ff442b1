variable "lambda_asset_dir" {
  description = "Directory holding <bin>/bootstrap.zip (cargo lambda output); null checks nothing."
  type        = string
  default     = null
}

variable "binaries" {
  description = "The functions to check: key => cargo lambda binary name (<lambda_asset_dir>/<bin>/bootstrap.zip)."
  type        = map(string)
}

variable "architecture" {
  description = "The architecture the functions are deployed as: arm64 or x86_64."
  type        = string
  validation {
    condition     = contains(["arm64", "x86_64"], var.architecture)
    error_message = "architecture must be arm64 or x86_64."
  }
}
