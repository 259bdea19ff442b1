// The deployment's contract, infra/contract/settings.json: every setting (default, limits,
// the environment variable and the functions that read it), each function's IAM actions under
// the default settings, and the alarms. The Terraform module's variables are generated from the
// same file; here the construct takes its defaults, limits and plain environment from it, and
// test/contract.test.ts checks the synthesized stack against the rest.
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface ContractSetting {
  /** The Terraform variable. */
  readonly name: string;
  /** The CDK prop (a dotted path for a nested one), or null where CDK has no such setting. */
  readonly cdk: string | null;
  /** A prop of the construct that is not one of its plain settings (OutboxSettings). */
  readonly cdk_prop?: boolean;
  /** The Terraform type: number, string, bool, list(string), ... */
  readonly type: string;
  readonly default?: unknown;
  /** CDK's default where it differs from Terraform's (the setting says why). */
  readonly cdk_default?: unknown;
  readonly min?: number;
  readonly max?: number;
  readonly integer?: boolean;
  readonly values?: readonly unknown[];
  /** The functions' environment variable; `value` says how a derived one is computed (no `value`: passed as it is). */
  readonly env?: { readonly name: string; readonly functions: readonly string[]; readonly value?: string; readonly default?: string };
  readonly doc: string;
}

export interface ContractAlarm {
  /** What it means and what to do; <prefix> is the deployment's. */
  readonly description: string;
  readonly namespace: string;
  readonly metric: string;
  readonly statistic: string;
  /** Seconds; with period_at_least_sweep, the sweep period when that is longer. */
  readonly period: number;
  readonly period_at_least_sweep?: boolean;
  readonly evaluation_periods: number;
  readonly datapoints_to_alarm: number;
  /** A number, or the setting that gives it. */
  readonly threshold: number | string;
  readonly missing_data: 'breaching' | 'notBreaching';
  /** The one dimension, "<Name> <value>" with <prefix> for the deployment's prefix. */
  readonly dimension: string;
}

export interface DeploymentContract {
  readonly settings: readonly ContractSetting[];
  readonly functions: Readonly<Record<string, { binary: string; timeout_seconds: number; memory_mb: number; iam_default: readonly string[] }>>;
  readonly alarms: Readonly<Record<string, ContractAlarm>>;
  readonly table: {
    readonly stream_view_type: string;
    readonly sweep_index: { readonly name: string; readonly hash_key: string; readonly range_key: string; readonly projection: string };
    readonly attribute_types: Readonly<Record<string, string>>;
  };
  readonly stream_mapping: {
    readonly starting_position_created_table: string;
    readonly starting_position_existing_table: string;
    readonly bisect_batch_on_function_error: boolean;
    readonly function_response_types: readonly string[];
  };
  readonly recovery_mapping: { readonly batch_size: number; readonly function_response_types: readonly string[] };
  readonly queues: { readonly retention_days: number; readonly stream_failures_visibility_seconds: number };
  readonly sweeper_invocation: Readonly<Record<string, number>>;
}

/** The package build copies settings.json beside the compiled code; a checkout reads the repository's file. */
export const CONTRACT_FILE =
  [path.join(__dirname, 'settings.json'), path.resolve(__dirname, '..', '..', 'contract', 'settings.json')].find((f) => fs.existsSync(f)) ??
  path.join(__dirname, 'settings.json');

export const DEPLOYMENT_CONTRACT: DeploymentContract = JSON.parse(fs.readFileSync(CONTRACT_FILE, 'utf8'));

/** The construct's plain settings (OutboxSettings), by CDK name. */
export const PLAIN_SETTINGS = DEPLOYMENT_CONTRACT.settings.filter((s) => s.cdk !== null && !s.cdk_prop);

/** The plain settings' defaults (those that have one), by CDK name. */
export function contractDefaults(): Record<string, unknown> {
  return Object.fromEntries(
    PLAIN_SETTINGS.filter((s) => (s.cdk_default ?? s.default ?? null) !== null).map((s) => [s.cdk, s.cdk_default ?? s.default]),
  );
}

/** Refuses a plain setting outside its limits (range, whole number, allowed values); unset ones pass. */
export function checkLimits(values: Readonly<Record<string, unknown>>): void {
  for (const s of PLAIN_SETTINGS) {
    const v = values[s.cdk!];
    if (v === undefined || v === null) continue;
    if (s.min !== undefined && s.max !== undefined) {
      if (typeof v !== 'number' || (s.integer && !Number.isInteger(v)) || v < s.min || v > s.max) {
        throw new Error(`${s.cdk} must be ${s.integer ? 'an integer' : 'a number'} from ${s.min} to ${s.max}, got ${v}`);
      }
    }
    if (s.values !== undefined && !s.values.includes(v)) {
      throw new Error(`${s.cdk} must be one of ${s.values.join(', ')}, got ${JSON.stringify(v)}`);
    }
  }
}

/**
 * The settings a function reads as they are: each setting whose variable names the function and
 * has no derived value, from `values` by CDK name; unset ones are left out.
 */
export function settingsEnvironment(fn: string, values: Readonly<Record<string, unknown>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const s of DEPLOYMENT_CONTRACT.settings) {
    if (!s.env || s.env.value !== undefined || !s.env.functions.includes(fn) || s.cdk === null) continue;
    const v = values[s.cdk];
    if (v !== undefined && v !== null) env[s.env.name] = String(v);
  }
  return env;
}
