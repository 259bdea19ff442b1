// Test helpers: throwaway asset directories with fake ELF `bootstrap` files and zips
// (so no Rust build is needed), and synthesis of the example app (`synth`: once per distinct
// settings in a process, each caller getting its own copy).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import * as cdk from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { type Architecture, CONTRACT } from '../lib/config.ts';
import { OutboxStack } from '../example/orders-stack.ts';
import { EXAMPLE, type OutboxSettingsInput } from '../example/settings.ts';

/**
 * A minimal ELF header (64 bytes) of a 64-bit little-endian executable for `arch`:
 * magic, class, data, version, e_type EXEC, e_machine (bytes 18-19), e_version, and
 * a section header table "at" byte 64 with no entries, so the header accounts for the
 * whole file. Enough for the artifact checks; not a runnable program.
 */
export function fakeElf(arch: Architecture | number): Buffer {
  const b = Buffer.alloc(64);
  Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]).copy(b, 0);
  b.writeUInt16LE(2, 16); // e_type: EXEC
  // e_machine: 0x3E x86-64, 0xB7 AArch64 (the ELF spec's values, independent of lib/artifact.ts).
  b.writeUInt16LE(typeof arch === 'number' ? arch : { x86_64: 0x3e, arm64: 0xb7 }[arch], 18);
  b.writeUInt32LE(1, 20); // e_version
  b.writeBigUInt64LE(64n, 40); // e_shoff
  b.writeUInt16LE(64, 52); // e_ehsize
  b.writeUInt16LE(64, 58); // e_shentsize
  return b;
}

/** A zip archive holding `data` as entry `name`, deflated or stored (like cargo lambda's, or `zip -0`). */
export function fakeZip(data: Buffer, { name = 'bootstrap', stored = false } = {}): Buffer {
  const body = stored ? data : zlib.deflateRawSync(data);
  const fileName = Buffer.from(name);
  const crc = zlib.crc32(data);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(stored ? 0 : 8, 8);
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(body.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(fileName.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(0x031e, 4); // made by Unix
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(stored ? 0 : 8, 10);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(body.length, 20);
  central.writeUInt32LE(data.length, 24);
  central.writeUInt16LE(fileName.length, 28);
  central.writeUInt32LE((0o100755 << 16) >>> 0, 38); // -rwxr-xr-x
  const cdOffset = local.length + fileName.length + body.length;
  const cdSize = central.length + fileName.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(cdSize, 12);
  end.writeUInt32LE(cdOffset, 16);
  return Buffer.concat([local, fileName, body, central, fileName, end]);
}

/** What to put in each <bin>/ directory of a fake asset directory. */
export interface FakeAssets {
  /** Content of <bin>/bootstrap, or none. */
  readonly binary?: Buffer;
  /** Content of <bin>/bootstrap.zip, or none. */
  readonly zip?: Buffer;
  /** Make bootstrap.zip the newer file (else bootstrap is). */
  readonly zipNewer?: boolean;
}

/** Every binary of the example app: the outbox's three and the reference consumer. */
export const BINARIES = [...Object.values(CONTRACT.binaries), EXAMPLE.consumerBinary];

/** The asset directories makeAssetDir made, removed by one exit handler (test/all.ts makes dozens in one process). */
const assetDirsMade: string[] = [];
process.once('exit', () => {
  for (const dir of assetDirsMade) fs.rmSync(dir, { recursive: true, force: true });
});

/** A new temporary asset directory for every binary (BINARIES), removed when the process exits. */
export function makeAssetDir({ binary, zip, zipNewer = false }: FakeAssets): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-assets-'));
  assetDirsMade.push(dir);
  const old = new Date(Date.now() - 3_600_000);
  for (const bin of BINARIES) {
    fs.mkdirSync(path.join(dir, bin));
    const write = (file: string, data: Buffer, older: boolean) => {
      fs.writeFileSync(path.join(dir, bin, file), data, { mode: 0o755 });
      if (older) fs.utimesSync(path.join(dir, bin, file), old, old);
    };
    if (binary) write('bootstrap', binary, zipNewer);
    if (zip) write('bootstrap.zip', zip, !zipNewer);
  }
  return dir;
}

const assetDirs: Partial<Record<Architecture, string>> = {};

/** A directory holding <bin>/bootstrap (a fake ELF header of `arch`) for every binary; one per process and architecture. */
export function fakeAssetDir(arch: Architecture = 'arm64'): string {
  return (assetDirs[arch] ??= makeAssetDir({ binary: fakeElf(arch) }));
}

export const ENV = { account: '123456789012', region: 'eu-west-1' };

export function newStack(settings: OutboxSettingsInput = {}, app = new cdk.App()): OutboxStack {
  return new OutboxStack(app, 'Outbox', { env: ENV, settings: { lambdaAssetDir: fakeAssetDir(settings.architecture), ...settings } });
}

/** Each template `synth` made in this process, by settingsKey of its settings. */
const synthesized = new Map<string, unknown>();

/**
 * The example stack's template for `settings`. A synthesis costs 0.2-1 CPU-s and many tests
 * read the same configuration, so each distinct configuration is synthesized once per process
 * (test/all.ts runs every test file in one); every call gets a Template over its own deep
 * copy, so no test sees another's changes. An explicit lambdaAssetDir is a directory the test
 * may fill or change between calls: those settings are synthesized every time.
 */
export function synth(settings: OutboxSettingsInput = {}): Template {
  const key = settings.lambdaAssetDir === undefined ? settingsKey(settings) : undefined;
  if (key === undefined) return Template.fromStack(newStack(settings));
  let json = synthesized.get(key);
  if (json === undefined) {
    json = Template.fromStack(newStack(settings)).toJSON();
    synthesized.set(key, json);
  }
  return Template.fromJSON(structuredClone(json) as Record<string, unknown>);
}

/**
 * A key equal for settings with the same keys in the same order and the same values; undefined
 * for settings that are not plain data. Key order is kept, not sorted: it orders routes (and so
 * environment variables and policy statements), so two orders are two configurations. An
 * undefined value is kept too: `{ x: undefined }` overrides a default that `{}` leaves.
 */
function settingsKey(settings: OutboxSettingsInput): string | undefined {
  let plain = true;
  const key = JSON.stringify(settings, (_name, value: unknown) => {
    if (value === undefined) return '\u0000undefined';
    const proto = typeof value === 'object' && value !== null ? Object.getPrototypeOf(value) : null;
    if (['function', 'symbol', 'bigint'].includes(typeof value) || (proto !== null && proto !== Object.prototype && proto !== Array.prototype)) plain = false;
    return value;
  });
  return plain ? key : undefined;
}

type Resources = Record<string, { Type: string; Properties?: Record<string, any>; Metadata?: Record<string, any> }>;

/** Logical id of the single resource of `type` whose properties contain `match` (shallow equality on given keys). */
export function logicalId(template: Template, type: string, match: Record<string, unknown>): string {
  const found = Object.entries(template.findResources(type) as Resources).filter(([, r]) =>
    Object.entries(match).every(([k, v]) => JSON.stringify(r.Properties?.[k]) === JSON.stringify(v)),
  );
  if (found.length !== 1) throw new Error(`expected one ${type} matching ${JSON.stringify(match)}, found ${found.length}`);
  return found[0][0];
}

/** The IAM policy statements attached to the role of the function named `functionName`. */
export function statementsOf(template: Template, functionName: string): Array<Record<string, any>> {
  const fn = (template.findResources('AWS::Lambda::Function') as Resources);
  const entry = Object.values(fn).find((r) => r.Properties?.FunctionName === functionName);
  if (!entry) throw new Error(`no function ${functionName}`);
  const roleId: string = entry.Properties!.Role['Fn::GetAtt'][0];
  const policies = Object.values(template.findResources('AWS::IAM::Policy') as Resources).filter((p) =>
    (p.Properties!.Roles as Array<{ Ref: string }>).some((r) => r.Ref === roleId),
  );
  return policies.flatMap((p) => p.Properties!.PolicyDocument.Statement as Array<Record<string, any>>);
}

export const asList = <T>(v: T | T[]): T[] => (Array.isArray(v) ? v : [v]);

/** Every action the function's role allows. */
/** The actions a function's role allows (its Deny statements left out). */
export function actionsOf(template: Template, functionName: string): string[] {
  return statementsOf(template, functionName)
    .filter((s) => s.Effect !== 'Deny')
    .flatMap((s) => asList(s.Action as string | string[]))
    .sort();
}

/** The dashboard body as JSON, with the region token replaced by "REGION". */
export function dashboardBody(t: Template): { widgets: Array<{ type: string; properties: Record<string, any> }> } {
  const dashboards = Object.values(t.findResources('AWS::CloudWatch::Dashboard'));
  assert.equal(dashboards.length, 1);
  const body = dashboards[0].Properties.DashboardBody;
  const text =
    typeof body === 'string'
      ? body
      : (body['Fn::Join'][1] as unknown[]).map((p) => (typeof p === 'string' ? p : JSON.stringify(p) === '{"Ref":"AWS::Region"}' ? 'REGION' : JSON.stringify(p))).join('');
  return JSON.parse(text);
}

/** A cdk-nag finding: the rule and the constructs it names. */
export interface Violation {
  ruleName: string;
  violatingConstructs: Array<{ constructPath: string }>;
}

/**
 * Synthesizes `app` (its validation plugins added, its outdir a fresh directory) quietly: the
 * plugins print their report, and a failed validation throws after writing it. The findings of
 * its validation-report.json, and `stack`'s template as JSON text.
 */
export function synthValidated(app: cdk.App, stack: cdk.Stack): { violations: Violation[]; template: string } {
  const { error, log } = console;
  console.error = console.log = () => undefined;
  try {
    app.synth();
  } catch (e) {
    if (!/Validation failed/.test((e as Error).message)) throw e;
  } finally {
    Object.assign(console, { error, log });
  }
  const report = JSON.parse(fs.readFileSync(path.join(app.outdir, 'validation-report.json'), 'utf8'));
  const violations: Violation[] = report.pluginReports.flatMap((r: { violations: Violation[] }) => r.violations);
  return { violations, template: fs.readFileSync(path.join(app.outdir, `${stack.artifactId}.template.json`), 'utf8') };
}
