// The function code cargo lambda builds, checked before anything is deployed: a
// missing, stale or wrong-architecture artifact is refused at synth instead of
// failing at the first invocation. Pure code (files in, a decision out).
//
// cargo lambda writes target/lambda/<bin>/bootstrap (`cargo lambda build`) or
// target/lambda/<bin>/bootstrap.zip (`--output-format zip`). When both are there,
// the newer one (modification time) is deployed: the other is left over from an
// earlier build. Whichever is deployed must be a 64-bit little-endian ELF
// executable for the configured architecture (e_machine, bytes 18-19).
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import type { Architecture } from './config';

/** ELF e_machine values of the two Lambda architectures. */
export const ELF_MACHINE: Readonly<Record<Architecture, number>> = { x86_64: 0x3e, arm64: 0xb7 };

/** The build command for an architecture (the zip form for Terraform). */
export function buildCommand(architecture: Architecture, zip = false): string {
  return `cargo lambda build --release ${architecture === 'arm64' ? '--arm64' : '--x86-64'}${zip ? ' --output-format zip' : ''}`;
}

/** What the first bytes of a file say it is, in words: "arm64", "x86_64", "ELF e_machine 0x28", "not an ELF executable (...)". */
export function describeElf(head: Uint8Array): { architecture?: Architecture; found: string } {
  const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(' ');
  if (head.length < 20 || head[0] !== 0x7f || head[1] !== 0x45 || head[2] !== 0x4c || head[3] !== 0x46) {
    return { found: `not an ELF executable (it starts with ${hex(head.subarray(0, 4)) || 'nothing: the file is empty'})` };
  }
  if (head[4] !== 2 || head[5] !== 1) return { found: 'a 32-bit or big-endian ELF file' };
  const machine = head[18] | (head[19] << 8);
  for (const [arch, m] of Object.entries(ELF_MACHINE) as Array<[Architecture, number]>) {
    if (m === machine) return { architecture: arch, found: `an ${arch} ELF executable` };
  }
  return { found: `an ELF executable for another machine (e_machine 0x${machine.toString(16)})` };
}

/**
 * The first `n` bytes of the entry `name` of a zip archive (stored or deflated), read
 * through the central directory. Throws when the archive is unreadable or lacks it.
 */
export function zipEntryHead(zip: Buffer, name: string, n = 64): Buffer {
  // End of central directory: signature 0x06054b50, within the last 22 + 65535 bytes.
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--) {
    if (zip.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('not a zip archive');
  const entries = zip.readUInt16LE(eocd + 10);
  let p = zip.readUInt32LE(eocd + 16);
  for (let e = 0; e < entries; e++) {
    if (zip.readUInt32LE(p) !== 0x02014b50) throw new Error('damaged zip central directory');
    const method = zip.readUInt16LE(p + 10);
    const compressed = zip.readUInt32LE(p + 20);
    const nameLen = zip.readUInt16LE(p + 28);
    const extraLen = zip.readUInt16LE(p + 30);
    const commentLen = zip.readUInt16LE(p + 32);
    const local = zip.readUInt32LE(p + 42);
    if (zip.toString('utf8', p + 46, p + 46 + nameLen) === name) {
      if (zip.readUInt32LE(local) !== 0x04034b50) throw new Error('damaged zip local header');
      const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
      const data = zip.subarray(start, start + compressed);
      if (method === 0) return data.subarray(0, n);
      if (method === 8) {
        // Only the head is needed: inflate a prefix, flushing what it decodes to.
        const prefix = data.subarray(0, Math.min(data.length, 64 * 1024));
        return zlib.inflateRawSync(prefix, { finishFlush: zlib.constants.Z_SYNC_FLUSH }).subarray(0, n);
      }
      throw new Error(`entry "${name}" uses compression method ${method} (only stored and deflated are read)`);
    }
    p += 46 + nameLen + extraLen + commentLen;
  }
  throw new Error(`no "${name}" entry (Lambda's provided runtime runs /var/task/bootstrap)`);
}

/** The artifact to deploy for `bin`: a directory holding `bootstrap`, or `bootstrap.zip`. */
export interface Artifact {
  readonly kind: 'binary' | 'zip';
  readonly path: string;
}

/**
 * Chooses and checks the artifact of `bin` in `assetDir`; throws an Error that names
 * the file, the architecture found and expected, and the build command.
 */
export function checkedArtifact(assetDir: string, bin: string, architecture: Architecture): Artifact {
  const dir = path.join(assetDir, bin);
  const binary = path.join(dir, 'bootstrap');
  const zip = path.join(dir, 'bootstrap.zip');
  const mtime = (f: string) => (fs.existsSync(f) ? fs.statSync(f).mtimeMs : undefined);
  const [tb, tz] = [mtime(binary), mtime(zip)];
  const fix =
    `Build it with \`${buildCommand(architecture)}\` at the root of the dynamodb-outbox repository ` +
    '(or set the architecture you built, or point the asset directory at one holding <bin>/bootstrap; ' +
    'the example app: context outbox:architecture, outbox:lambdaAssetDir or OUTBOX_LAMBDA_ASSET_DIR).';
  if (tb === undefined && tz === undefined) throw new Error(`${binary} not found. ${fix}`);
  // The newer file wins: the other one is left over from an earlier build.
  const chosen: Artifact = tz !== undefined && (tb === undefined || tz > tb) ? { kind: 'zip', path: zip } : { kind: 'binary', path: binary };
  let head: Uint8Array;
  try {
    if (chosen.kind === 'zip') {
      head = zipEntryHead(fs.readFileSync(zip), 'bootstrap');
    } else {
      const fd = fs.openSync(binary, 'r');
      try {
        const buf = Buffer.alloc(64);
        head = buf.subarray(0, fs.readSync(fd, buf, 0, 64, 0));
      } finally {
        fs.closeSync(fd);
      }
    }
  } catch (e) {
    throw new Error(`${chosen.path}: cannot read the function code: ${(e as Error).message}. ${fix}`);
  }
  const what = chosen.kind === 'zip' ? `${zip} (entry "bootstrap")` : binary;
  const { architecture: found, found: description } = describeElf(head);
  if (found !== architecture) {
    throw new Error(`${what} is ${description}, but the functions are deployed as ${architecture}. ${fix}`);
  }
  return chosen;
}
