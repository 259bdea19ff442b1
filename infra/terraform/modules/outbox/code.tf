# Each function's code: function_code's, by reference (a zip, an S3 object or an image), else
# <lambda_asset_dir>/<bin>/bootstrap.zip, checked at plan (modules/artifacts). As the CDK
# construct's `code` does before `assetDir`, function by function: a root with its own mains
# gives its zips and needs neither our binary names nor any bundled artifact.

locals {
  # What modules/artifacts checks: the functions function_code leaves to lambda_asset_dir.
  asset_binaries = { for k, bin in local.binaries : k => bin if !contains(keys(var.function_code), k) }

  given_code = { for k, c in var.function_code : k => merge(c, {
    package_type = c.image_uri == null ? "Zip" : "Image"
    # A zip on disk is hashed here (a change of it redeploys), unless its hash is given: then it
    # may still be built after plan.
    source_code_hash = c.source_code_hash != null ? c.source_code_hash : try(fileexists(c.filename), false) ? filebase64sha256(c.filename) : null
  }) }
  asset_code = { for k in keys(local.asset_binaries) : k => {
    package_type      = "Zip"
    filename          = try(local.artifacts[k].zip, null)
    source_code_hash  = try(fileexists(local.artifacts[k].zip), false) ? filebase64sha256(local.artifacts[k].zip) : null
    s3_bucket         = null
    s3_key            = null
    s3_object_version = null
    image_uri         = null
  } }
  code = merge(local.asset_code, local.given_code)

  # A given zip that is not there at plan, with no hash to deploy it by.
  code_problems = concat(local.artifact_problems, [
    for k, c in var.function_code : format(
      "function_code.%s.filename: %s not found at plan, and no source_code_hash is given. Build the zip before planning, or give its source_code_hash (filebase64sha256 of the zip) so that it is read at apply.",
      k, c.filename,
    ) if c.filename != null && c.source_code_hash == null && !try(fileexists(c.filename), false)
  ])
}
