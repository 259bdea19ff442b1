output "artifacts" {
  description = "Per function: the zip to deploy and the architecture read from its bootstrap (null where it cannot be read); null without lambda_asset_dir. The caller refuses them when `problems` is not empty."
  value = var.lambda_asset_dir == null ? null : {
    for k, p in local.artifact_paths : k => { zip = p.zip, architecture = local.elf_found[k].architecture }
  }
}

output "problems" {
  description = "Why each refused artifact is refused, sorted by key (empty when all are fine)."
  value       = local.artifact_problems
}
