// dynamodb-outbox-cdk: the transactional outbox for DynamoDB as one CDK construct.
export { Outbox, type OutboxCode, type OutboxProps, functionCode } from './outbox';
export {
  type Architecture,
  CONTRACT,
  DEFAULTS,
  DEFAULT_KEY_NAMES,
  type KeyNames,
  type OutboxFunction,
  type OutboxSettings,
  type OutboxSettingsInput,
  QUEUE_RETENTION_DAYS,
  SQS_MAX_MESSAGE_BYTES,
  STREAM_FILTER_FILE,
  SWEEP_SCAN_MODES,
  HOME_REGION_ATTRIBUTE,
  REGION,
  canonicalJson,
  homeStreamFilter,
  type SweepScanMode,
  loadStreamFilter,
  names,
  resolveKeyNames,
  resolveOutboxSettings,
  sweepScanModeOf,
} from './config';
export { type OutboxDestination, type OutboxRoute, type RouteTarget, routeTarget } from './routes';
export { type AlarmDefinition, type DashboardExtras, functionAlarms, queueNotEmptyAlarm } from './monitoring';
export { buildCommand, checkedArtifact } from './artifact';
