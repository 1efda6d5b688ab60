/**
 * How a runnerInstance workflow is started, shared by the pool's start activity
 * and by clients, so every instance carries the same id rules, search attributes and memo.
 */
import { TypedSearchAttributes } from '@temporalio/common';
import { runnerWorkflowId, type RunnerInstanceInput } from './messages';
import { RUNNER_LEAKED, RUNNER_NAME, RUNNER_POOL, RUNNER_PROVIDER, RUNNER_STATUS } from './search-attributes';

/** Memo on every instance: which GitHub credentials and scope own its runner (never a secret). */
export interface InstanceMemo {
  github: RunnerInstanceInput['spec']['github'];
  ephemeral: boolean;
  /** Started by its pool and counted there: it has no reason to live once that pool is gone. */
  pooled?: true;
}

export function instanceStartOptions(input: RunnerInstanceInput) {
  const memo: InstanceMemo = { github: input.spec.github, ephemeral: input.spec.ephemeral, ...(input.notifyPool ? { pooled: true as const } : {}) };
  return {
    workflowId: runnerWorkflowId(input.name),
    // A runner name lives once. A pool's start retried after its answer was lost
    // (the worker died mid-call) can come after that runner already did its job and
    // closed; allowed to start again, it would begin a second life its pool has
    // already written off as gone, idle and unseen forever.
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
    args: [input] as [RunnerInstanceInput],
    typedSearchAttributes: new TypedSearchAttributes([
      { key: RUNNER_STATUS, value: 'pending_create' },
      { key: RUNNER_POOL, value: input.pool },
      { key: RUNNER_PROVIDER, value: input.provider },
      { key: RUNNER_NAME, value: input.name },
      { key: RUNNER_LEAKED, value: false },
    ]),
    memo: memo as unknown as Record<string, unknown>,
  };
}
