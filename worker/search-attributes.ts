import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { SEARCH_ATTRIBUTE_KEYS } from '../workflows/search-attributes';

const INDEXED_TYPE = {
  KEYWORD: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  BOOL: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
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
  const searchAttributes: Record<string, temporal.api.enums.v1.IndexedValueType> = {};
  for (const key of missing) searchAttributes[key.name] = INDEXED_TYPE[key.type as keyof typeof INDEXED_TYPE];
  await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
  return missing.map((key) => key.name);
}
