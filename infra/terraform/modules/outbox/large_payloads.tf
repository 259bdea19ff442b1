# The large-payload bucket (S3 large-payload offload, infra/CONTRACT.md): payloads too large for a
# destination or a DynamoDB item are stored at outbox/<MessageId> and a pointer is sent.
# Encrypted (SSE-S3, or SSE-KMS with var.kms_key_arn), TLS only, no public access, ACLs
# disabled, objects under outbox/ expire after var.large_payload_retention_days (longer than any
# queue keeps a pointer); a FAILED message's payload copied to failed/ does not expire, as its
# item does not (no TTL on FAILED). Nothing here when var.large_payloads is false or an existing bucket is
# attached (var.large_payload_bucket_name: only the grants and the variable name it).

locals {
  # The bucket in use: created here, or attached by name (var.large_payload_bucket_name); null when off.
  large_payload_bucket_arn = local.large_payloads.existing_name != null ? "arn:${data.aws_partition.current.partition}:s3:::${local.large_payloads.existing_name}" : one(aws_s3_bucket.large_payloads[*].arn)
}

data "aws_partition" "current" {}

resource "aws_s3_bucket" "large_payloads" {
  #checkov:skip=CKV_AWS_18:Server access logs need a second bucket (with its own logging question); this bucket holds only short-lived message payloads that the deployment's own roles write and read. Audit object access with CloudTrail data events when required.
  #checkov:skip=CKV_AWS_21:Versioning would keep every expired or overwritten payload as a noncurrent version; a payload is written once under its message id and is worthless after its retention.
  #checkov:skip=CKV_AWS_144:Cross-region replication: payloads are transient (days) and their messages live in one region; a replica would not make a message deliverable elsewhere.
  #checkov:skip=CKV_AWS_145:SSE-KMS with the deployment's key when var.kms_key_arn is set (as for the tables and queues); SSE-S3 otherwise, like the AWS-managed encryption of the tables.
  #checkov:skip=CKV2_AWS_62:Event notifications: nothing reacts to a payload being stored; the pointer message is the notification.
  count = local.large_payloads.create ? 1 : 0

  bucket_prefix = local.large_payloads.bucket_prefix
  # Like the tables: a protected deployment keeps its payloads on destroy (Terraform refuses to
  # delete a non-empty bucket); a throwaway one deletes them.
  force_destroy = !var.deletion_protection
  tags          = var.tags
}

resource "aws_s3_bucket_public_access_block" "large_payloads" {
  count = local.large_payloads.create ? 1 : 0

  bucket                  = aws_s3_bucket.large_payloads[0].id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "large_payloads" {
  count = local.large_payloads.create ? 1 : 0

  bucket = aws_s3_bucket.large_payloads[0].id
  rule {
    object_ownership = "BucketOwnerEnforced" # ACLs disabled
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "large_payloads" {
  count = local.large_payloads.create ? 1 : 0

  bucket = aws_s3_bucket.large_payloads[0].id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = local.large_payloads.sse_algorithm
      kms_master_key_id = local.large_payloads.kms_key_arn
    }
    bucket_key_enabled = local.large_payloads.bucket_key_enabled
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "large_payloads" {
  count = local.large_payloads.create ? 1 : 0

  bucket = aws_s3_bucket.large_payloads[0].id
  rule {
    id     = local.large_payloads.lifecycle_rule_id
    status = "Enabled"
    filter {
      prefix = local.large_payloads.key_prefix
    }
    expiration {
      days = local.large_payloads.retention_days
    }
  }
  # Whole bucket: an upload that never completed is billed until it is aborted.
  rule {
    id     = local.large_payloads.abort_rule_id
    status = "Enabled"
    filter {}
    abort_incomplete_multipart_upload {
      days_after_initiation = local.large_payloads.abort_incomplete_multipart_days
    }
  }
}

resource "aws_s3_bucket_policy" "large_payloads_tls_only" {
  count = local.large_payloads.create ? 1 : 0

  bucket = aws_s3_bucket.large_payloads[0].id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "DenyWithoutTls"
      Effect    = "Deny"
      Principal = { AWS = "*" }
      Action    = "s3:*"
      Resource  = [aws_s3_bucket.large_payloads[0].arn, "${aws_s3_bucket.large_payloads[0].arn}/*"]
      Condition = { Bool = { "aws:SecureTransport" = "false" } }
    }]
  })
  # The public access block first: a policy put before it could be refused as public.
  depends_on = [aws_s3_bucket_public_access_block.large_payloads]
}
