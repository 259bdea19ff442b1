# Function code built by cargo lambda, checked at plan: a missing, non-ELF, wrong-architecture or stale
# artifact is refused here, with the architecture found, the one expected and the build
# command, instead of failing at the first invocation.
#
# The module deploys <lambda_asset_dir>/<bin>/bootstrap.zip. What decides is the ELF
# header of the bootstrap inside it: magic 7f 45 4c 46, 64-bit little-endian, e_machine
# (bytes 18-19) 0x3E for x86_64 or 0xB7 for arm64.
#   - A stored (uncompressed) zip is read directly.
#   - cargo lambda deflates its zips, and Terraform cannot inflate. The architecture is
#     then read from the bare bootstrap cargo lambda builds beside it, which must be the
#     same build: its size (by its ELF header: the section header table ends the file)
#     must equal the size the zip records for its bootstrap entry. Terraform has no
#     CRC-32 or file-size function; an older or other-architecture binary differs in size.
# Terraform cannot decode arbitrary bytes either (base64decode wants UTF-8), so the first
# bytes of each file are decoded from filebase64 here, 4 characters to 3 bytes.

locals {
  b64_alphabet  = split("", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
  elf_machines  = { "62" = "x86_64", "183" = "arm64" }        # e_machine 0x3E, 0xB7
  bootstrap     = [98, 111, 111, 116, 115, 116, 114, 97, 112] # the entry name "bootstrap"
  build_command = "cargo lambda build --release ${var.architecture == "arm64" ? "--arm64" : "--x86-64"}"

  artifact_paths = var.lambda_asset_dir == null ? {} : { for k, bin in var.binaries : k => {
    zip    = "${var.lambda_asset_dir}/${bin}/bootstrap.zip"
    binary = "${var.lambda_asset_dir}/${bin}/bootstrap"
  } }

  # The first 384 bytes of each zip (local header, name, and a stored entry's ELF header)
  # and the first 66 of each bare bootstrap, as numbers; "=" padding decodes as zeros, so
  # `length` is the number of real bytes.
  artifact_b64 = { for k, p in local.artifact_paths : k => {
    zip    = fileexists(p.zip) ? substr(filebase64(p.zip), 0, 512) : ""
    binary = fileexists(p.binary) ? substr(filebase64(p.binary), 0, 88) : ""
  } }
  artifact_bytes = { for k, parts in local.artifact_b64 : k => { for part, text in parts : part => {
    length = floor(length(text) / 4) * 3 - length(regexall("=", text))
    bytes = flatten([for g in chunklist([for c in(text == "" ? [] : split("", text)) : c == "=" ? 0 : index(local.b64_alphabet, c)], 4) : [
      g[0] * 4 + floor(g[1] / 16),
      (g[1] % 16) * 16 + floor(g[2] / 4),
      (g[2] % 4) * 64 + g[3],
    ]])
  } } }

  # The zip's first local file header: signature, flags, method, sizes, name.
  zips = { for k, a in local.artifact_bytes : k => a.zip.length < 30 ? null : {
    is_zip            = tolist(slice(a.zip.bytes, 0, 4)) == tolist([80, 75, 3, 4])
    data_descriptor   = floor((a.zip.bytes[6] + 256 * a.zip.bytes[7]) / 8) % 2 == 1 # sizes not in the header
    method            = a.zip.bytes[8] + 256 * a.zip.bytes[9]
    uncompressed_size = a.zip.bytes[22] + 256 * a.zip.bytes[23] + 65536 * a.zip.bytes[24] + 16777216 * a.zip.bytes[25]
    name              = slice(a.zip.bytes, 30, min(a.zip.length, 30 + a.zip.bytes[26] + 256 * a.zip.bytes[27]))
    data_at           = 30 + a.zip.bytes[26] + 256 * a.zip.bytes[27] + a.zip.bytes[28] + 256 * a.zip.bytes[29]
  } }

  # The ELF header that decides: inside a stored zip, else the bare bootstrap. (Byte lists
  # are compared with tolist on both sides: a tuple never equals a list.)
  elf_sources = { for k, z in local.zips : k => (
    try(z.method == 0, false)
    ? { file = "${local.artifact_paths[k].zip} (entry \"bootstrap\")", head = slice(local.artifact_bytes[k].zip.bytes, min(z.data_at, local.artifact_bytes[k].zip.length), min(z.data_at + 64, local.artifact_bytes[k].zip.length)) }
    : { file = local.artifact_paths[k].binary, head = slice(local.artifact_bytes[k].binary.bytes, 0, local.artifact_bytes[k].binary.length) }
  ) }
  elves = { for k, src in local.elf_sources : k => {
    file = src.file
    elf  = length(src.head) >= 20 && try(tolist(slice(src.head, 0, 4)) == tolist([127, 69, 76, 70]), false)
    lsb  = length(src.head) >= 20 && try(src.head[4] == 2 && src.head[5] == 1, false)
    # e_machine, and the file size the header implies: e_shoff + e_shnum * e_shentsize.
    machine = length(src.head) >= 20 ? src.head[18] + 256 * src.head[19] : null
    size = length(src.head) >= 64 ? (
      src.head[40] + 256 * src.head[41] + 65536 * src.head[42] + 16777216 * src.head[43] + 4294967296 * (src.head[44] + 256 * src.head[45])
      + (src.head[60] + 256 * src.head[61]) * (src.head[58] + 256 * src.head[59])
    ) : null
    first_bytes = join(" ", [for b in slice(src.head, 0, min(4, length(src.head))) : format("%02x", b)])
  } }
  elf_found = { for k, e in local.elves : k => {
    architecture = e.elf && e.lsb ? lookup(local.elf_machines, tostring(e.machine), null) : null
    words = (
      !e.elf ? "not an ELF executable (${e.first_bytes == "" ? "the file is empty" : "it starts with ${e.first_bytes}"})"
      : !e.lsb ? "a 32-bit or big-endian ELF file"
      : contains(keys(local.elf_machines), tostring(e.machine)) ? "an ${local.elf_machines[tostring(e.machine)]} ELF executable"
      : format("an ELF executable for another machine (e_machine 0x%x)", e.machine)
    )
  } }

  fix = "Build it with `${local.build_command}` and then `${local.build_command} --output-format zip` at the repository root (the second zips the first's binary), or set architecture to the one you built."
  artifact_problem = { for k, p in local.artifact_paths : k => (
    !fileexists(p.zip) ? "${p.zip} not found. ${local.fix}"
    : try(!local.zips[k].is_zip || tolist(local.zips[k].name) != tolist(local.bootstrap), true) ? "${p.zip} is not a zip archive whose first entry is \"bootstrap\", as cargo lambda writes it. ${local.fix}"
    : local.zips[k].method != 0 && !fileexists(p.binary) ? "${p.zip} is compressed, so Terraform cannot read the architecture of the bootstrap inside; it reads the bootstrap cargo lambda builds beside it, and there is none. ${local.fix}"
    : local.elf_found[k].architecture != var.architecture ? "${local.elves[k].file} is ${local.elf_found[k].words}, but the functions are deployed as ${var.architecture}. ${local.fix}"
    : local.zips[k].method != 0 && local.zips[k].data_descriptor ? "${p.zip} does not record the size of its bootstrap in the entry header (it was written with a data descriptor), so it cannot be matched with ${p.binary}. ${local.fix}"
    : local.zips[k].method != 0 && try(local.elves[k].size != local.zips[k].uncompressed_size, true) ? format(
      "%s holds a %d-byte bootstrap, but %s is %s bytes by its ELF header: they come from different builds. %s",
      p.zip, local.zips[k].uncompressed_size, p.binary, try(tostring(local.elves[k].size), "an unknown number of"), local.fix,
    )
    : null
  ) }
  artifact_problems = [for k in sort(keys(local.artifact_problem)) : local.artifact_problem[k] if local.artifact_problem[k] != null]
}
