/**
 * runnerPool: holds a pool's settings and keeps the right number of
 * runnerInstance workflows alive. Instances are abandoned children: they outlive
 * the pool's continue-as-new and report back with `runnerChanged`.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  ParentClosePolicy,
  setHandler,
  startChild,
  upsertMemo,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { instanceStartOptions } from './instance-options';
import { deleteSignal, runnerWorkflowId, type RunnerInstanceInput } from './messages';
import { PoolBook } from './pool-book';
import { poolMemoOf } from './pool-memo';
import {
  deletePoolSignal,
  jobProgressSignal,
  jobQueuedSignal,
  POOL_MESSAGE_DESCRIPTIONS,
  poolStateQuery,
  runnerChangedSignal,
  updatePoolSignal,
  type PoolView,
  type RunnerPoolInput,
} from './pool-messages';
import { runnerInstance } from './runner-instance';
import { PoolScaleSet } from './pool-scale-set';
import { SCALE_SET_MESSAGE_DESCRIPTIONS, scaleSetDemandSignal } from './scale-set-messages';
import { RUNNER_POOL } from './search-attributes';

/** Well below Temporal's limits; the server may also suggest continuing earlier. */
const DEFAULT_HISTORY_LIMIT = 4_000;

export async function runnerPool(input: RunnerPoolInput): Promise<PoolView> {
  const book = new PoolBook(input.settings, input.timings, input.carried);
  const scaleSet = new PoolScaleSet(input.timings);
  let dirty = true;

  upsertSearchAttributes([{ key: RUNNER_POOL, value: input.settings.name }]);
  setHandler(poolStateQuery, () => book.view(), { description: POOL_MESSAGE_DESCRIPTIONS.poolState });
  setHandler(updatePoolSignal, ({ settings }) => {
    if (settings.name !== book.settings.name) {
      log.warn('ignored settings for another pool', { pool: book.settings.name, got: settings.name });
      return;
    }
    book.updateSettings(settings);
    upsertMemo({ ...poolMemoOf(settings) });
    dirty = true;
  }, { description: POOL_MESSAGE_DESCRIPTIONS.updatePool });
  setHandler(deletePoolSignal, () => {
    book.startDeleting();
    dirty = true;
  }, { description: POOL_MESSAGE_DESCRIPTIONS.deletePool });
  setHandler(jobQueuedSignal, (job) => {
    if (book.jobQueued(job, Date.now())) dirty = true;
  }, { description: POOL_MESSAGE_DESCRIPTIONS.jobQueued });
  setHandler(jobProgressSignal, (args) => {
    if (book.jobProgress(args, Date.now())) dirty = true;
  }, { description: POOL_MESSAGE_DESCRIPTIONS.jobProgress });
  setHandler(runnerChangedSignal, (args) => {
    if (book.runnerChanged(args, Date.now())) dirty = true;
  }, { description: POOL_MESSAGE_DESCRIPTIONS.runnerChanged });
  setHandler(scaleSetDemandSignal, (args) => {
    if (book.scaleSetDemand(args)) dirty = true;
  }, { description: SCALE_SET_MESSAGE_DESCRIPTIONS.scaleSetDemand });

  function instanceInput(name: string): RunnerInstanceInput {
    const s = book.settings;
    return {
      name,
      pool: s.name,
      provider: s.provider,
      spec: {
        github: s.github,
        labels: s.labels,
        image: s.image,
        flavor: s.flavor,
        osType: s.osType,
        osArch: s.osArch,
        extraSpecs: s.extraSpecs,
        runnerGroup: s.runnerGroup,
        runnerGroupId: s.runnerGroupId,
        ephemeral: s.ephemeral,
        bootstrapTimeoutMs: s.bootstrapTimeout,
        ...book.scaleSetRef(),
      },
      timings: input.timings,
      poolSettingsVersion: book.settingsVersion,
      notifyPool: true,
    };
  }

  // Child starts are not awaited by the loop: under a burst the pool keeps deciding while
  // dozens of starts are in flight, instead of one round trip per batch.
  let startsInFlight = 0;
  function createRunner(): void {
    const name = book.nextRunnerName(uuid4().replace(/-/g, '').slice(0, 10));
    book.runnerStarted(name, Date.now());
    startsInFlight += 1;
    startChild(runnerInstance, { ...instanceStartOptions(instanceInput(name)), parentClosePolicy: ParentClosePolicy.ABANDON })
      .catch((err: unknown) => {
        log.warn('runner workflow not started', { runner: name, error: String(err) });
        book.runnerNotStarted(name);
        dirty = true;
      })
      .finally(() => (startsInFlight -= 1));
  }

  function askToLeave(name: string, reason: string): void {
    book.markDeleteRequested(name);
    getExternalWorkflowHandle(runnerWorkflowId(name))
      .signal(deleteSignal, { reason })
      .catch((err: unknown) => log.warn('delete not delivered', { runner: name, error: String(err) }));
  }

  const historyLimit = input.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  while (!book.done) {
    await scaleSet.sync(book.settings, book.settingsVersion, book.deleting);
    const plan = book.plan(Date.now());
    for (const { name, reason } of plan.remove) askToLeave(name, reason);
    for (let i = 0; i < plan.create; i++) createRunner();
    dirty = false;

    const info = workflowInfo();
    if (info.continueAsNewSuggested || info.historyLength > historyLimit) {
      await condition(() => startsInFlight === 0 && allHandlersFinished());
      await continueAsNew<typeof runnerPool>({ ...input, settings: book.settings, carried: book.carry() });
    }
    const waitMs = plan.wakeAt !== undefined ? Math.max(1, plan.wakeAt - Date.now()) : undefined;
    if (waitMs === undefined) await condition(() => dirty);
    else await condition(() => dirty, waitMs);
  }
  if (book.settings.mode === 'scaleSet') await scaleSet.finish(book.settings, 'pool deleted');
  return book.view();
}
