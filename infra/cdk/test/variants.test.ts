// The example app under the settings of test/variants.json (every setting changed; the scan
// and the bucket off), synthesized in this process as `cdk synth -c outbox:<name>=<value>`
// synthesizes it: cdk.json's context, every value a string, cdk-nag as a validation plugin;
// environment-agnostic (the CLI would take a region from the machine's AWS configuration).
// With OUTBOX_TEMPLATE_DIR set, each template is written there as <variant>.template.json,
// for infra/check.py's cfn-lint (a `cdk synth` process per variant cost ~14 CPU-s).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import * as cdk from 'aws-cdk-lib';
import { addExampleStack } from '../example/orders-stack.ts';
import { fakeAssetDir, synthValidated } from './helpers.ts';

const read = (file: string) => JSON.parse(fs.readFileSync(path.join(__dirname, file), 'utf8'));
const CDK_CONTEXT: Record<string, unknown> = read('../cdk.json').context;
const VARIANTS: Record<string, Record<string, string>> = read('variants.json');

/** The example app's template and cdk-nag's findings under `settings`, as `cdk synth -c` gives them. */
function synthesize(settings: Record<string, string>) {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-variant-'));
  try {
    // What the CLI adds by default (`cdk synth --no-version-reporting`): path and asset metadata.
    const cli = { 'aws:cdk:enable-path-metadata': true, 'aws:cdk:enable-asset-metadata': true };
    const context = { ...CDK_CONTEXT, ...cli, ...Object.fromEntries(Object.entries(settings).map(([k, v]) => [`outbox:${k}`, v])) };
    const app = new cdk.App({ context, outdir });
    const stack = addExampleStack(app, { OUTBOX_LAMBDA_ASSET_DIR: fakeAssetDir() });
    const { violations, template } = synthValidated(app, stack);
    const findings = violations.map((v) => v.ruleName);
    return { findings, template };
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}

describe('the example app under other settings', () => {
  for (const [name, settings] of Object.entries(VARIANTS)) {
    it(`${name}: synthesizes with no cdk-nag finding`, () => {
      const { findings, template } = synthesize(settings);
      assert.deepEqual(findings, []);
      const resources = Object.values(JSON.parse(template).Resources as Record<string, { Type: string }>);
      assert.ok(resources.filter((r) => r.Type === 'AWS::Lambda::Function').length >= 4, 'the outbox functions and the consumer');
      const dir = process.env.OUTBOX_TEMPLATE_DIR;
      if (dir) fs.writeFileSync(path.join(dir, `${name}.template.json`), template);
    });
  }
});
