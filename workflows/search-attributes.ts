import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** The instance status (GARM's names), so `RunnerStatus="running"` finds running instances. */
export const RUNNER_STATUS = defineSearchAttributeKey('RunnerStatus', SearchAttributeType.KEYWORD);
export const RUNNER_POOL = defineSearchAttributeKey('RunnerPool', SearchAttributeType.KEYWORD);
export const RUNNER_PROVIDER = defineSearchAttributeKey('RunnerProvider', SearchAttributeType.KEYWORD);
export const RUNNER_NAME = defineSearchAttributeKey('RunnerName', SearchAttributeType.KEYWORD);
/** Set when a forced delete could not confirm the machine is gone: the sweep looks for these. */
export const RUNNER_LEAKED = defineSearchAttributeKey('RunnerLeaked', SearchAttributeType.BOOL);

export const SEARCH_ATTRIBUTE_KEYS = [RUNNER_STATUS, RUNNER_POOL, RUNNER_PROVIDER, RUNNER_NAME, RUNNER_LEAKED] as const;
