# The large-payload bucket (S3 claim check, infra/CONTRACT.md): its settings, the functions'
# environment and the grants -- PutObject (publisher, sweeper) on <bucket>/outbox/* and
# <bucket>/failed/*, GetObject on <bucket>/outbox/* (a FAILED message's payload copied to failed/),
# nothing for the recovery function; consumers are told the objects (large_payload_objects).

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}

# On in every run here unless a run says otherwise: the module's default is off (a plain
# configuration's resources: outbox_only.tftest.hcl).
variables {
  large_payloads = true
}


# One plan for 4 former runs with these same inputs (each headed below by its old name):
# a run costs ~1 CPU-s of provider start and plan, whatever it asserts.
run "defaults_an_sse_s3_bucket_named_by_the_module_its_grants_and_no_threshold" {
  command = plan

  # defaults_create_an_sse_s3_bucket_expiring_outbox_objects_after_30_days
  assert {
    condition = local.large_payloads.enabled && local.large_payloads.key_prefix == "outbox/" && local.large_payloads.retention_days == 30 && (
      local.large_payloads.abort_incomplete_multipart_days == 1
    )
    error_message = "With large_payloads the bucket is created; objects under outbox/ expire after 30 days, incomplete multipart uploads after 1 day."
  }
  assert {
    condition     = local.large_payloads.sse_algorithm == "AES256" && local.large_payloads.kms_key_arn == null && local.large_payloads.bucket_key_enabled == null
    error_message = "Without a KMS key: SSE-S3."
  }
  assert {
    condition     = local.large_payloads.retention_days * 86400 > local.queue_settings.message_retention_seconds
    error_message = "Payloads outlive every queue's messages."
  }
  assert {
    condition     = local.large_payloads.bucket_prefix == "outbox-payloads-"
    error_message = "bucket_prefix is <prefix>-payloads- (the provider adds a unique suffix)."
  }

  # grants_put_to_publisher_and_sweeper_on_outbox_and_failed_objects_only
  assert {
    condition = alltrue([for fn in ["publisher", "sweeper"] : [for s in local.policies[fn].Statement : s if startswith(s.Sid, "PutLargePayloads") || s.Sid == "KeepFailedPayloads"] == [
      { Sid = "PutLargePayloads", Effect = "Allow", Action = "s3:PutObject", Resource = ["arn:aws:s3:::outbox-payloads-20240101/outbox/*", "arn:aws:s3:::outbox-payloads-20240101/failed/*"] },
      { Sid = "KeepFailedPayloads", Effect = "Allow", Action = "s3:GetObject", Resource = "arn:aws:s3:::outbox-payloads-20240101/outbox/*" },
    ]])
    error_message = "The publisher and the sweeper may PutObject under outbox/ and failed/ of the bucket, and GetObject under outbox/ (a FAILED message's payload copied to failed/), nothing else of it."
  }
  assert {
    condition     = local.large_payloads.failed_key_prefix == "failed/" && aws_s3_bucket_lifecycle_configuration.large_payloads[0].rule[0].filter[0].prefix == "outbox/"
    error_message = "The expiry rule covers outbox/ only: a FAILED message's payload under failed/ lives as long as its item (no TTL)."
  }
  assert {
    condition     = local.large_payload_objects == "arn:aws:s3:::outbox-payloads-20240101/outbox/*"
    error_message = "Consumers are told the objects to GetObject (the orders consumer's grant: examples/orders-config)."
  }
  assert {
    condition     = length([for s in local.policies.recovery.Statement : s if anytrue([for a in flatten([s.Action]) : startswith(a, "s3:")])]) == 0
    error_message = "The recovery function gets no S3 action."
  }
  assert {
    condition     = join(",", sort(distinct([for a in flatten([for p in values(local.policies) : [for s in p.Statement : s.Action]]) : a if startswith(a, "s3:")]))) == "s3:GetObject,s3:PutObject"
    error_message = "The only S3 actions of the outbox's functions are PutObject and GetObject (CopyObject's source)."
  }

  # threshold_unset_by_default
  assert {
    condition     = !contains(keys(local.publisher_environment), "OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES") && !contains(keys(local.sweeper_environment), "OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES")
    error_message = "OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES is unset unless the setting is given."
  }

  # a_created_bucket_is_named_by_modules_outbox
  assert {
    condition     = local.large_payloads.create && local.large_payloads.existing_name == null && !contains(keys(local.publisher_environment), "OUTBOX_LARGE_PAYLOAD_BUCKET")
    error_message = "A created bucket's name is only known once created: modules/outbox adds it."
  }
}

run "a_long_prefix_still_fits_bucket_prefix" {
  command = plan
  variables {
    prefix = "a-very-long-deployment-prefix-x1"
  }
  assert {
    condition     = length(local.large_payloads.bucket_prefix) <= 37 && local.large_payloads.bucket_prefix == "a-very-long-deployment-pref-payloads-"
    error_message = "bucket_prefix may have at most 37 characters: the prefix is cut to 27."
  }
}

run "environment_carries_no_threshold_by_default_and_the_setting_when_given" {
  command = plan
  variables {
    large_payload_threshold_bytes = 200000
  }
  assert {
    condition     = local.publisher_environment.OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES == "200000" && local.sweeper_environment.OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES == "200000"
    error_message = "The threshold reaches the publisher and the sweeper."
  }
  assert {
    condition     = !contains(keys(local.recovery_environment), "OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES")
    error_message = "Only the writers get the threshold."
  }
}

run "kms_key_encrypts_the_bucket_and_the_functions_may_use_it" {
  command = plan
  variables {
    kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }
  assert {
    condition     = local.large_payloads.sse_algorithm == "aws:kms" && local.large_payloads.kms_key_arn == var.kms_key_arn && local.large_payloads.bucket_key_enabled == true
    error_message = "With a KMS key: SSE-KMS with it, S3 Bucket Key on."
  }
  assert {
    condition     = alltrue([for fn in ["publisher", "sweeper"] : contains(flatten([for s in local.policies[fn].Statement : flatten([s.Action]) if s.Resource == var.kms_key_arn]), "kms:GenerateDataKey")])
    error_message = "Writers may GenerateDataKey (PutObject under SSE-KMS) on the key."
  }
}

run "off_means_no_s3_grants" {
  command = plan
  variables {
    large_payloads = false
  }
  assert {
    condition     = !local.large_payloads.enabled
    error_message = "large_payloads = false: no bucket."
  }
  assert {
    condition     = length(flatten([for fn, p in local.policies : [for s in p.Statement : s if anytrue([for a in flatten([s.Action]) : startswith(a, "s3:")])]])) == 0
    error_message = "large_payloads = false: no S3 action in any policy."
  }
}

run "retention_not_longer_than_the_queues_is_refused" {
  command = plan
  variables {
    large_payload_retention_days = 14
  }
  expect_failures = [var.large_payload_retention_days]
}

run "fractional_retention_is_refused" {
  command = plan
  variables {
    large_payload_retention_days = 20.5
  }
  expect_failures = [var.large_payload_retention_days]
}

run "threshold_out_of_range_is_refused" {
  command = plan
  variables {
    large_payload_threshold_bytes = 0
  }
  expect_failures = [var.large_payload_threshold_bytes]
}

run "threshold_without_a_bucket_is_refused" {
  command = plan
  variables {
    large_payloads                = false
    large_payload_threshold_bytes = 1000
  }
  expect_failures = [var.large_payload_threshold_bytes]
}

run "an_existing_bucket_is_attached_by_name" {
  command = plan
  variables {
    large_payload_bucket_name = "shop-payloads"
  }
  assert {
    condition     = local.large_payloads.enabled && !local.large_payloads.create && local.large_payloads.existing_name == "shop-payloads"
    error_message = "An existing bucket: nothing created, its name used."
  }
  assert {
    condition     = local.publisher_environment.OUTBOX_LARGE_PAYLOAD_BUCKET == "shop-payloads" && local.sweeper_environment.OUTBOX_LARGE_PAYLOAD_BUCKET == "shop-payloads"
    error_message = "The attached bucket's name reaches the publisher and the sweeper."
  }
  assert {
    condition     = !contains(keys(local.recovery_environment), "OUTBOX_LARGE_PAYLOAD_BUCKET")
    error_message = "Only the writers are told the bucket."
  }
}

run "bucket_name_must_be_a_bucket_name" {
  command = plan
  variables {
    large_payload_bucket_name = "Bad_Name"
  }
  expect_failures = [var.large_payload_bucket_name]
}

run "bucket_name_without_large_payloads_is_refused" {
  command = plan
  variables {
    large_payloads            = false
    large_payload_bucket_name = "shop-payloads"
  }
  expect_failures = [var.large_payload_bucket_name]
}
