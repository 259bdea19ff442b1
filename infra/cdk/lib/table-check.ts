// A table given as a construct of the app (dynamodb.Table, TableV2) checked at synth: its keys,
// stream, TTL and sweeper index against the key names and what the functions need, the
// comparison each function makes before its first piece of work (dynamodb-outbox-core's
// schema/table_check.rs; the Terraform module's existing_table.tf). An imported table
// (fromTableArn, fromTableAttributes) has no definition here: the functions check it when they start.
import * as cdk from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { CONTRACT, type KeyNames } from './config';

/** What the app defines of a table; `undefined` where it cannot be read (a token). */
export interface SeenTable {
  /** How the messages name it: its tableName, else its construct path. */
  readonly name: string;
  readonly partitionKey?: string;
  /** `null`: the table has no sort key. */
  readonly sortKey?: string | null;
  /** Attribute name → type (S, N, B) of the attributes the table defines. */
  readonly types: Readonly<Record<string, string>>;
  /** Global secondary index name → its key attributes. */
  readonly indexes: Readonly<Record<string, { readonly partitionKey?: string; readonly sortKey?: string | null }>>;
  /** `null`: no stream. */
  readonly streamViewType: string | null;
  /** The TTL attribute; `null`: TTL off. */
  readonly ttlAttribute: string | null;
}

/** Stream view types whose records carry the new image, which the publisher reads. */
const NEW_IMAGE_VIEWS = ['NEW_IMAGE', 'NEW_AND_OLD_IMAGES'];

interface KeySchemaElement {
  readonly attributeName?: unknown;
  readonly keyType?: unknown;
}

const text = (v: unknown): string | undefined => (typeof v === 'string' && !cdk.Token.isUnresolved(v) ? v : undefined);

function keysOf(schema: unknown): { partitionKey?: string; sortKey?: string | null } {
  if (!Array.isArray(schema)) return {};
  const of = (type: string) => (schema as KeySchemaElement[]).find((k) => k.keyType === type);
  const range = of('RANGE');
  return { partitionKey: text(of('HASH')?.attributeName), sortKey: range ? text(range.attributeName) : null };
}

/** The definition of `table` when it is a Table or TableV2 of this app; undefined for an imported one. */
export function seenTable(table: dynamodb.ITable): SeenTable | undefined {
  const cfn = table.node.defaultChild;
  if (!(cfn instanceof dynamodb.CfnTable) && !(cfn instanceof dynamodb.CfnGlobalTable)) return undefined;
  const resolve = (v: unknown): any => cdk.Stack.of(cfn).resolve(v);
  const attributes = (resolve(cfn.attributeDefinitions) ?? []) as Array<{ attributeName?: unknown; attributeType?: unknown }>;
  const indexes = (resolve(cfn.globalSecondaryIndexes) ?? []) as Array<{ indexName?: unknown; keySchema?: unknown }>;
  const stream = resolve(cfn.streamSpecification) as { streamViewType?: unknown } | undefined;
  const ttl = resolve(cfn.timeToLiveSpecification) as { attributeName?: unknown; enabled?: unknown } | undefined;
  const keys = keysOf(resolve(cfn.keySchema));
  return {
    name: text(resolve(cfn.tableName)) ?? table.node.path,
    ...keys,
    types: Object.fromEntries(
      attributes.flatMap((a) => {
        const [name, type] = [text(a.attributeName), text(a.attributeType)];
        return name && type ? [[name, type] as const] : [];
      }),
    ),
    indexes: Object.fromEntries(
      indexes.flatMap((i) => {
        const name = text(i.indexName);
        return name ? [[name, keysOf(i.keySchema)] as const] : [];
      }),
    ),
    streamViewType: stream?.streamViewType === undefined ? null : String(stream.streamViewType),
    ttlAttribute: ttl && ttl.enabled !== false && text(ttl.attributeName) ? String(ttl.attributeName) : null,
  };
}

/**
 * Each way `seen` differs from what the key names and the functions need: one message each,
 * naming the setting, the table's value and what to do. Empty when the table fits.
 */
export function tableMismatches(seen: SeenTable, keyNames: Required<KeyNames>): string[] {
  const table = `table "${seen.name}"`;
  const out: string[] = [];
  const key = (what: 'partition' | 'sort', setting: 'partitionKey' | 'sortKey', actual: string | null | undefined) => {
    if (actual === undefined || actual === keyNames[setting]) return;
    out.push(
      actual === null
        ? `${table} has no ${what} key, and the outbox needs one (keyNames.${setting} "${keyNames[setting]}"): give a table with a string partition key and a string sort key.`
        : `${table} does not match keyNames.${setting}: configured "${keyNames[setting]}", the table's ${what} key is "${actual}". Set keyNames: { ${setting}: '${actual}' }, or give the outbox table.`,
    );
  };
  key('partition', 'partitionKey', seen.partitionKey);
  key('sort', 'sortKey', seen.sortKey);
  const nonString = (
    [
      ['partition', seen.partitionKey],
      ['sort', seen.sortKey],
    ] as const
  ).flatMap(([what, k]) => (k && seen.types[k] && seen.types[k] !== 'S' ? [`${what} key "${k}" is of type ${seen.types[k]}`] : []));
  if (nonString.length > 0) {
    out.push(`${table}: its ${nonString.join(' and ')}, and the outbox writes its keys as strings: give a table whose partition and sort keys are of type STRING.`);
  }
  if (seen.streamViewType === null) {
    out.push(noStream(seen.name));
  } else if (!NEW_IMAGE_VIEWS.includes(seen.streamViewType)) {
    out.push(
      `${table} has a stream of view type ${seen.streamViewType}, and the publisher reads each item from its record's new image: set the table's stream to NEW_IMAGE (or NEW_AND_OLD_IMAGES).`,
    );
  }
  if (seen.ttlAttribute !== null && seen.ttlAttribute !== keyNames.ttlAttribute) {
    out.push(
      `${table} has TTL on "${seen.ttlAttribute}", but keyNames.ttlAttribute is "${keyNames.ttlAttribute}": set keyNames: { ttlAttribute: '${seen.ttlAttribute}' } (a table has one TTL attribute), or SENT items are never deleted.`,
    );
  }
  out.push(...indexMismatches(seen, table));
  return out;
}

function indexMismatches(seen: SeenTable, table: string): string[] {
  const want = { name: CONTRACT.sweepIndexName, partitionKey: CONTRACT.sweepIndexPartitionKey, sortKey: CONTRACT.sweepIndexSortKey };
  const keys = `${want.partitionKey} (STRING) / ${want.sortKey} (NUMBER)`;
  const index = seen.indexes[want.name];
  if (!index) {
    const names = Object.keys(seen.indexes);
    return [
      `${table} has no index ${want.name} (its global secondary indexes: ${names.length ? names.join(', ') : 'none'}), which the sweeper and the order fence read: ` +
        `add the global secondary index ${want.name} keyed ${keys}, projection KEYS_ONLY (infra/README.md, attaching to an existing table).`,
    ];
  }
  const found = [
    ...(index.partitionKey !== want.partitionKey ? [`has partition key "${index.partitionKey ?? '-'}"`] : []),
    ...(index.sortKey !== want.sortKey ? [`has sort key "${index.sortKey ?? '-'}"`] : []),
    ...Object.entries({ [want.partitionKey]: 'S', [want.sortKey]: 'N' }).flatMap(([a, t]) =>
      seen.types[a] && seen.types[a] !== t ? [`has ${a} of type ${seen.types[a]}`] : [],
    ),
  ];
  return found.length ? [`${table}: its index ${want.name} ${found.join(' and ')}, and the sweeper needs ${keys}: recreate the index so.`] : [];
}

/** A table of the app without a stream. */
export function noStream(name: string): string {
  return `table "${name}" has no stream, and the publisher reads each new item from it: set stream: dynamodb.StreamViewType.NEW_IMAGE (TableV2: dynamoStream) on the table.`;
}

/** TTL off: SENT items stay. Worth a warning, not a failed synth. */
export function ttlOffWarning(seen: SeenTable, keyNames: Required<KeyNames>): string | undefined {
  return seen.ttlAttribute === null
    ? `table "${seen.name}" has TTL off: SENT items are never deleted. Turn TTL on for "${keyNames.ttlAttribute}" (timeToLiveAttribute).`
    : undefined;
}
