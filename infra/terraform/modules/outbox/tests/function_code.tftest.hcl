# function_code gives a function's code by reference (a zip of your own, an S3 object or an
# image): a root with its own mains needs neither our binary names nor any artifact on disk,
# and lambda_asset_dir is checked only for the functions function_code leaves out (code.tf).

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}

run "all_by_reference_without_any_artifact" {
  command = plan
  variables {
    lambda_asset_dir = null
    function_code = {
      publisher = { s3_bucket = "releases", s3_key = "v1/publisher.zip", source_code_hash = "cHVibGlzaGVy" }
      sweeper   = { s3_bucket = "releases", s3_key = "v1/sweeper.zip", s3_object_version = "3" }
      recovery  = { image_uri = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/outbox-recovery:v1" }
    }
  }
  assert {
    condition = (
      aws_lambda_function.this["publisher"].s3_key == "v1/publisher.zip" && aws_lambda_function.this["publisher"].filename == null
      && aws_lambda_function.this["publisher"].source_code_hash == "cHVibGlzaGVy" && aws_lambda_function.this["publisher"].runtime == "provided.al2023"
      && aws_lambda_function.this["sweeper"].s3_object_version == "3" && aws_lambda_function.this["sweeper"].package_type == "Zip"
      && length(local.asset_binaries) == 0 && length(local.code_problems) == 0
    )
    error_message = "S3 objects deploy as zips of the provided runtime, with no artifact read."
  }
  assert {
    condition = (
      aws_lambda_function.this["recovery"].package_type == "Image" && aws_lambda_function.this["recovery"].runtime == null
      && aws_lambda_function.this["recovery"].handler == null
    )
    error_message = "An image deploys without runtime or handler (the image has its own)."
  }
}

# One function of your own; the other two from lambda_asset_dir, whose recovery build is missing
# (tests/artifacts/no-recovery) and not needed.
run "own_zip_beside_the_asset_dir" {
  command = plan
  variables {
    lambda_asset_dir = "./tests/artifacts/no-recovery"
    function_code    = { recovery = { filename = "./tests/artifacts/arm64/orders-consumer/bootstrap.zip" } }
  }
  assert {
    condition = (
      aws_lambda_function.this["recovery"].filename == "./tests/artifacts/arm64/orders-consumer/bootstrap.zip"
      && aws_lambda_function.this["recovery"].source_code_hash == filebase64sha256("./tests/artifacts/arm64/orders-consumer/bootstrap.zip")
      && aws_lambda_function.this["sweeper"].filename == "./tests/artifacts/no-recovery/outbox-sweeper/bootstrap.zip"
      && sort(keys(local.asset_binaries)) == sort(["publisher", "sweeper"])
    )
    error_message = "A given zip is deployed (hashed at plan); the rest come from lambda_asset_dir."
  }
}

run "zip_built_after_plan_needs_its_hash" {
  command = plan
  variables {
    lambda_asset_dir = null
    function_code = {
      publisher = { filename = "build/publisher.zip" }
      sweeper   = { filename = "build/sweeper.zip", source_code_hash = "c3dlZXBlcg==" }
      recovery  = { filename = "./tests/artifacts/arm64/outbox-recovery/bootstrap.zip" }
    }
  }
  expect_failures = [aws_lambda_function.this]
  assert {
    condition = length(local.code_problems) == 1 && local.code_problems[0] == join(" ", [
      "function_code.publisher.filename: build/publisher.zip not found at plan, and no source_code_hash is given.",
      "Build the zip before planning, or give its source_code_hash (filebase64sha256 of the zip) so that it is read at apply.",
    ])
    error_message = "Only a missing zip without a hash is refused, named."
  }
}

run "no_code_for_two_functions" {
  command = plan
  variables {
    lambda_asset_dir = null
    function_code    = { publisher = { image_uri = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/p:v1" } }
  }
  expect_failures = [var.lambda_asset_dir]
}

run "two_kinds_of_code" {
  command = plan
  variables {
    function_code = { sweeper = { filename = "sweeper.zip", s3_bucket = "releases", s3_key = "sweeper.zip" } }
  }
  expect_failures = [var.function_code]
}

run "code_for_an_unknown_function" {
  command = plan
  variables {
    function_code = { consumer = { filename = "consumer.zip" } }
  }
  expect_failures = [var.function_code]
}
