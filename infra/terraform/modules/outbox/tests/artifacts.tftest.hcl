# The function code is checked at plan: a missing, non-ELF, wrong-architecture or
# stale artifact is refused with the architecture found, the one expected and the
# build command. The asset directories are tests/artifacts/* (fake ELF headers,
# written by infra/fake-artifacts.py).

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}

run "arm64_zip_with_its_binary" {
  command = plan
  variables {
    lambda_asset_dir = "./tests/artifacts/arm64"
  }
  assert {
    condition     = local.artifacts.sweeper.zip == "./tests/artifacts/arm64/outbox-sweeper/bootstrap.zip"
    error_message = "The module deploys <lambda_asset_dir>/<bin>/bootstrap.zip."
  }
  assert {
    condition     = local.artifacts.publisher.architecture == "arm64" && local.artifacts.recovery.architecture == "arm64"
    error_message = "The architecture is read from the ELF header."
  }
}

run "x86_64_zip_with_its_binary" {
  command = plan
  variables {
    lambda_asset_dir = "./tests/artifacts/x86_64"
    architecture     = "x86_64"
  }
  assert {
    condition     = local.artifacts.sweeper.architecture == "x86_64"
    error_message = "An x86_64 build deploys as x86_64."
  }
}

run "stored_zip_is_read_directly" {
  command = plan
  variables {
    lambda_asset_dir = "./tests/artifacts/stored-arm64"
  }
  assert {
    condition     = local.artifacts.publisher.architecture == "arm64"
    error_message = "A stored (uncompressed) zip is read without a bare bootstrap."
  }
}

# Each refusal says why; the assertions check it is refused for the reason meant.

run "arm64_build_deployed_as_x86_64" {
  command = plan
  variables {
    lambda_asset_dir = "./tests/artifacts/arm64"
    architecture     = "x86_64"
  }
  expect_failures = [aws_lambda_function.this]
  assert {
    condition = length(local.artifact_problems) == 3 && alltrue([for m in local.artifact_problems : (
      strcontains(m, "/bootstrap is an arm64 ELF executable, but the functions are deployed as x86_64")
      && strcontains(m, "cargo lambda build --release --x86-64")
    )])
    error_message = "Each function's refusal names the file, the architecture found and expected, and the build command."
  }
}

run "x86_64_build_deployed_as_arm64" {
  command = plan
  variables {
    lambda_asset_dir = "./tests/artifacts/x86_64"
  }
  expect_failures = [aws_lambda_function.this]
  assert {
    condition = anytrue([for m in local.artifact_problems : (
      strcontains(m, "x86_64/outbox-publisher/bootstrap is an x86_64 ELF executable, but the functions are deployed as arm64")
      && strcontains(m, "cargo lambda build --release --arm64")
    )])
    error_message = "The refusal names the file, the architecture found and expected, and the build command."
  }
}

run "stored_arm64_zip_deployed_as_x86_64" {
  command = plan
  variables {
    lambda_asset_dir = "./tests/artifacts/stored-arm64"
    architecture     = "x86_64"
  }
  expect_failures = [aws_lambda_function.this]
  assert {
    condition     = anytrue([for m in local.artifact_problems : strcontains(m, "outbox-sweeper/bootstrap.zip (entry \"bootstrap\") is an arm64 ELF executable")])
    error_message = "A stored zip's own bootstrap entry is what is checked."
  }
}

run "not_an_elf_executable" {
  command = plan
  variables {
    lambda_asset_dir = "./tests/artifacts/not-elf"
  }
  expect_failures = [aws_lambda_function.this]
  assert {
    condition     = anytrue([for m in local.artifact_problems : strcontains(m, "outbox-publisher/bootstrap is not an ELF executable (it starts with 23 21 2f 62)")])
    error_message = "A script placeholder is refused as not ELF, with its first bytes."
  }
}

run "compressed_zip_without_its_binary" {
  command = plan
  variables {
    lambda_asset_dir = "./tests/artifacts/zip-only"
  }
  expect_failures = [aws_lambda_function.this]
  assert {
    condition     = anytrue([for m in local.artifact_problems : strcontains(m, "outbox-sweeper/bootstrap.zip is compressed, so Terraform cannot read the architecture")])
    error_message = "A deflated zip alone cannot be checked, and the refusal says so."
  }
}

run "binary_and_zip_of_different_builds" {
  command = plan
  variables {
    lambda_asset_dir = "./tests/artifacts/stale"
  }
  expect_failures = [aws_lambda_function.this]
  assert {
    condition     = anytrue([for m in local.artifact_problems : strcontains(m, "stale/outbox-sweeper/bootstrap.zip holds a 128-byte bootstrap, but ./tests/artifacts/stale/outbox-sweeper/bootstrap is 64 bytes by its ELF header: they come from different builds")])
    error_message = "A bootstrap beside a zip of another build is refused."
  }
}

run "missing_build" {
  command = plan
  variables {
    lambda_asset_dir = "./tests/artifacts/missing"
  }
  expect_failures = [aws_lambda_function.this]
  assert {
    condition     = anytrue([for m in local.artifact_problems : strcontains(m, "missing/outbox-publisher/bootstrap.zip not found. Build it with `cargo lambda build --release --arm64`")])
    error_message = "A missing build is refused with the build command."
  }
}
