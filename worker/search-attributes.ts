import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { SEARCH_ATTRIBUTE_KEYS } from '../workflows/search-attributes';

// @temporalio/proto is CommonJS: under plain Node ESM only its default export is importable.
const { IndexedValueType } = proto.temporal.api.enums.v1;
type IndexedValueType = proto.temporal.api.enums.v1.IndexedValueType;

const INDEXED_TYPE = {
  KEYWORD: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  BOOL: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
} as const;

/**
 * Registers runnerflow's custom search attributes when the namespace lacks them,
 * so a worker pointed at a fresh cluster works without a manual `temporal operator` step.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = SEARCH_ATTRIBUTE_KEYS.filter((key) => !known.has(key.name));
  if (missing.length === 0) return [];
  const searchAttributes: Record<string, IndexedValueType> = {};
  for (const key of missing) searchAttributes[key.name] = INDEXED_TYPE[key.type as keyof typeof INDEXED_TYPE];
  await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
  return missing.map((key) => key.name);
}
