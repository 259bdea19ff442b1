variable "regions" {
  description = "The global table's two regions: the first creates the table (and is the default home region unless default_home_region says otherwise), the second holds its replica. One outbox deployment in each."
  type        = list(string)
  default     = ["us-east-1", "eu-west-1"]
  validation {
    condition     = length(var.regions) == 2 && length(distinct(var.regions)) == 2
    error_message = "regions must be two different regions (this example has two providers; add a provider and a module block per further region)."
  }
}

variable "default_home_region" {
  description = "Home region of outbox items without HomeRegion (minimal producers'): the same in every region. null: the first of regions."
  type        = string
  default     = null
}

variable "prefix" {
  description = "Prefix of every physical name (the same in both regions: the names global to the account carry the region)."
  type        = string
  default     = "outbox"
}

variable "lambda_asset_dir" {
  description = "cargo lambda output directory holding <bin>/bootstrap.zip and <bin>/bootstrap: the repository's target/lambda (relative to this directory)."
  type        = string
  default     = "../../../../target/lambda"
}

variable "routes" {
  description = "Routes, topic => destination (module input routes), the same in both regions. A queue, topic or bus is regional: route to each region's own, or to one region's (cross-region sends), as your consumers need."
  type        = any
  default     = {}
}

variable "alarm_topic_arns" {
  description = "SNS topic per region that the region's alarms notify (region => topic ARN); a region without one has no outbox alarms."
  type        = map(string)
  default     = {}
}

variable "deletion_protection" {
  description = "Deletion protection of the global table. Turn it off (and apply) before destroying a throwaway deployment."
  type        = bool
  default     = true
}

variable "kms_key_arns" {
  description = "Customer-managed KMS key per region (region => key ARN, a key of that region, e.g. a multi-Region key's replicas) for the table's replica there and that region's outbox queues; a region without one uses AWS-managed / SQS-managed encryption."
  type        = map(string)
  default     = {}
}
