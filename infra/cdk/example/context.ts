// The example app's settings from the CDK context: strings from `-c outbox:<name>=<value>`,
// or JSON values from cdk.json.
import type { Architecture, SweepScanMode } from '../lib/config.ts';
import { PLAIN_SETTINGS } from '../lib/contract.ts';
import type { ExistingTable, OutboxSettingsInput, Route } from './settings.ts';

/** Parses the CDK context (strings from `-c key=value`, or JSON values from cdk.json) into overrides. */
export function settingsFromContext(get: (key: string) => unknown, env: NodeJS.ProcessEnv = process.env): OutboxSettingsInput {
  const str = (k: string): string | undefined => {
    const v = get(`outbox:${k}`);
    return v === undefined || v === null || v === '' ? undefined : String(v);
  };
  const num = (k: string): number | undefined => {
    const v = str(k);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (Number.isNaN(n)) throw new Error(`context outbox:${k} must be a number, got "${v}"`);
    return n;
  };
  const bool = (k: string): boolean | undefined => {
    const v = get(`outbox:${k}`);
    if (v === undefined || v === null || v === '') return undefined;
    if (v === true || v === 'true' || v === 'on') return true;
    if (v === false || v === 'false' || v === 'off') return false;
    throw new Error(`context outbox:${k} must be true/false (or on/off), got "${String(v)}"`);
  };
  // off | backstop | on, or the old true/false (a JSON boolean in cdk.json): checked by resolveSettings.
  const scanMode = (k: string): SweepScanMode | boolean | undefined => {
    const v = get(`outbox:${k}`);
    if (v === undefined || v === null || v === '') return undefined;
    return typeof v === 'boolean' ? v : (String(v) as SweepScanMode);
  };
  const json = <T>(k: string): T | undefined => {
    const v = get(`outbox:${k}`);
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') return v as T;
    try {
      return JSON.parse(v) as T;
    } catch (e) {
      throw new Error(`context outbox:${k} must be JSON: ${(e as Error).message}`);
    }
  };
  const regionList = (k: string): string[] | undefined => {
    const v = get(`outbox:${k}`);
    if (v === undefined || v === null || v === '') return undefined;
    if (Array.isArray(v)) return v as string[];
    const text = String(v).trim();
    return text.startsWith('[') ? json<string[]>(k) : text.split(',').map((r) => r.trim()).filter((r) => r !== '');
  };
  const nullableNum = (k: string): number | null | undefined => {
    const v = get(`outbox:${k}`);
    if (v === null || (typeof v === 'string' && ['off', 'none', 'null'].includes(v))) return null;
    return num(k);
  };
  // The example's own settings and those of other shapes than number, string and bool.
  const special: OutboxSettingsInput = {
    routes: json<Record<string, Route>>('routes'),
    defaultDestination: str('defaultDestination'),
    sweepScanMode: scanMode('sweepScanMode'),
    consumerBatchSize: num('consumerBatchSize'),
    consumerMaxReceiveCount: num('consumerMaxReceiveCount'),
    sweeperReservedConcurrency: nullableNum('sweeperReservedConcurrency'),
    architecture: str('architecture') as Architecture | undefined,
    kmsKeyArn: str('kmsKeyArn'),
    existingTable: json<ExistingTable>('existingTable'),
    alarmTopicArn: str('alarmTopicArn'),
    partitionKeyName: str('partitionKeyName'),
    sortKeyName: str('sortKeyName'),
    ttlAttributeName: str('ttlAttributeName'),
    // JSON (["us-east-1","eu-west-1"]) or a comma-separated list.
    globalTableRegions: regionList('globalTableRegions'),
    lambdaAssetDir: str('lambdaAssetDir') ?? (env.OUTBOX_LAMBDA_ASSET_DIR || undefined),
  };
  // Every other plain setting of the construct, parsed by its type in infra/contract/settings.json.
  const plain = PLAIN_SETTINGS.filter((s) => !(s.cdk! in special)).map((s) => [
    s.cdk!,
    s.type === 'number' ? num(s.cdk!) : s.type === 'bool' ? bool(s.cdk!) : str(s.cdk!),
  ]);
  return { ...(Object.fromEntries(plain) as OutboxSettingsInput), ...special };
}
