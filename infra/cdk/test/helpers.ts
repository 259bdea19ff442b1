// Test helpers: a throwaway asset directory with dummy `bootstrap` files (so no
// Rust build is needed), and synthesis of a fresh App per call.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as cdk from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { CONTRACT, type OutboxSettings } from '../lib/config.ts';
import { OutboxStack } from '../lib/outbox-stack.ts';

let assetDir: string | undefined;

/** A directory holding <bin>/bootstrap for the three binaries; created once per test process. */
export function fakeAssetDir(): string {
  if (!assetDir) {
    assetDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-assets-'));
    for (const bin of Object.values(CONTRACT.binaries)) {
      fs.mkdirSync(path.join(assetDir, bin));
      fs.writeFileSync(path.join(assetDir, bin, 'bootstrap'), '#!/bin/sh\necho "test asset, not a real function" >&2\nexit 1\n', { mode: 0o755 });
    }
    process.on('exit', () => fs.rmSync(assetDir!, { recursive: true, force: true }));
  }
  return assetDir;
}

export const ENV = { account: '123456789012', region: 'eu-west-1' };

export function newStack(settings: Partial<OutboxSettings> = {}, app = new cdk.App()): OutboxStack {
  return new OutboxStack(app, 'Outbox', { env: ENV, settings: { lambdaAssetDir: fakeAssetDir(), ...settings } });
}

export function synth(settings: Partial<OutboxSettings> = {}): Template {
  return Template.fromStack(newStack(settings));
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
export function actionsOf(template: Template, functionName: string): string[] {
  return statementsOf(template, functionName).flatMap((s) => asList(s.Action as string | string[])).sort();
}
