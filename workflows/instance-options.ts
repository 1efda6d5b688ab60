/**
 * How a runnerInstance workflow is started, shared by the pool workflow (child
 * workflows) and by clients, so every instance carries the same search attributes and memo.
 */
import { TypedSearchAttributes } from '@temporalio/common';
import { runnerWorkflowId, type RunnerInstanceInput } from './messages';
import { RUNNER_LEAKED, RUNNER_NAME, RUNNER_POOL, RUNNER_PROVIDER, RUNNER_STATUS } from './search-attributes';

/** Memo on every instance: which GitHub credentials and scope own its runner (never a secret). */
export interface InstanceMemo {
  github: RunnerInstanceInput['spec']['github'];
  ephemeral: boolean;
}

export function instanceStartOptions(input: RunnerInstanceInput) {
  const memo: InstanceMemo = { github: input.spec.github, ephemeral: input.spec.ephemeral };
  return {
    workflowId: runnerWorkflowId(input.name),
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
