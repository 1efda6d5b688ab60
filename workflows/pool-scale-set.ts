/**
 * The runnerPool's seam to its scale-set listener (pools in `scaleSet` mode):
 * starts it as an abandoned child with a fixed id (so there is never a second
 * one), forwards settings changes, tells it to take no more jobs once the pool
 * is being deleted, and stops it (deleting the scale set) when the pool ends.
 * Kept apart from the pool loop so the two evolve independently.
 */
import { getExternalWorkflowHandle, log, ParentClosePolicy, patched, startChild, WorkflowIdReusePolicy, workflowInfo } from '@temporalio/workflow';
import type { PoolSettings } from '../domain/pool';
import { scaleSetNameOf, sessionOwnerName } from '../domain/scale-set';
import type { InstanceTimings } from '../domain/timings';
import { scaleSetListener } from './scale-set-listener';
import { scaleSetListenerId, stopListenerSignal, updateListenerSignal, type ScaleSetListenerSettings, type UpdateListenerArgs } from './scale-set-messages';

export function listenerSettingsOf(settings: PoolSettings, installation: string, deleting = false): ScaleSetListenerSettings {
  return {
    pool: settings.name,
    target: { credentials: settings.github.credentials, scope: settings.github.scope },
    name: scaleSetNameOf(settings),
    runnerGroup: settings.runnerGroup,
    labels: settings.labels,
    minRunners: settings.scaleSet?.minRunners ?? 0,
    maxRunners: settings.maxRunners,
    ownerName: sessionOwnerName(installation, settings.name),
    takesJobs: settings.enabled && !deleting,
  };
}

export class PoolScaleSet {
  private started = false;
  private sentVersion = 0;
  private toldDeleting = false;

  constructor(private readonly timings: InstanceTimings) {}

  /**
   * Starts the listener once per run and forwards newer settings; a no-op for webhook pools.
   * `knownScaleSetId`: the scale set the pool's listener last reported (see `startListener`).
   */
  async sync(settings: PoolSettings, settingsVersion: number, deleting: boolean, knownScaleSetId?: number): Promise<void> {
    if (settings.mode !== 'scaleSet') return;
    if (deleting) {
      this.closeToJobs(settings);
      return;
    }
    const listener = listenerSettingsOf(settings, workflowInfo().taskQueue);
    if (!this.started) {
      this.started = true;
      this.sentVersion = settingsVersion;
      try {
        await this.startListener(listener, knownScaleSetId);
        return;
      } catch (err) {
        // Already running (an earlier run of this pool started it): it carries on, and gets the settings
        // below. The earlier run may have taken new settings too late to pass them on (while it waited to
        // continue as new), so they are sent whatever their version. (patched: runs from before replay without.)
        log.info('scale-set listener already running', { pool: settings.name, detail: String(err) });
        if (patched('listener-settings-on-each-run')) this.sentVersion = 0;
      }
    }
    if (this.sentVersion === settingsVersion) return;
    this.sentVersion = settingsVersion;
    await this.update(listener);
  }

  /**
   * Starts the listener again if it no longer runs. Nothing else would: the pool starts it once
   * per run, so a listener terminated by hand (or reset past its end) would leave the scale set
   * without a session, and its jobs without runners, until the pool next continued as new, which
   * an idle pool may not do for days. Called at each of the pool's looks (`poolAuditInterval`):
   * one start, refused at once while the listener runs. A listener started again begins with a
   * new session, which lists the jobs waiting for the scale set.
   */
  async ensureListening(settings: PoolSettings, deleting: boolean, knownScaleSetId?: number): Promise<void> {
    if (settings.mode !== 'scaleSet' || deleting || !this.started) return;
    try {
      await this.startListener(listenerSettingsOf(settings, workflowInfo().taskQueue), knownScaleSetId);
    } catch {
      return; // Running: nothing to do.
    }
    log.warn('scale-set listener was not running: started again', { pool: settings.name });
  }

  /**
   * A listener started where another one left off is told the scale set its pool knows of. Found
   * by name instead, it would look in the pool's runner group, and a scale set still in its old
   * group (its move cut short with its listener) would be left there while a second one was made.
   */
  private async startListener(listener: ScaleSetListenerSettings, knownScaleSetId?: number): Promise<void> {
    await startChild(scaleSetListener, {
      workflowId: scaleSetListenerId(listener.pool),
      args: [{ settings: listener, timings: this.timings, ...(knownScaleSetId !== undefined ? { knownScaleSetId } : {}) }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    });
  }

  /**
   * The pool is being deleted: its runners drain, and it makes no new ones. The listener keeps its
   * session until the last runner is gone, because the JobStarted and JobCompleted messages are
   * how those runners learn of their jobs; but it acquires no more, so that GitHub can give them
   * to a scale set that will run them. Once per run: a run continued while deleting tells it
   * again, which changes nothing. (patched: pools from before replay without telling it.)
   *
   * Not awaited: the pool looks whether its last runner is gone before this call and clears its
   * wake-up after it, so the last runner's report, taken while this waited, would be missed and
   * the deleted pool would never end.
   */
  private closeToJobs(settings: PoolSettings): void {
    if (this.toldDeleting || !patched('listener-told-pool-is-deleting')) return;
    this.toldDeleting = true;
    void this.update(listenerSettingsOf(settings, workflowInfo().taskQueue, true));
  }

  private async update(listener: ScaleSetListenerSettings): Promise<void> {
    const args: UpdateListenerArgs = {
      minRunners: listener.minRunners,
      maxRunners: listener.maxRunners,
      labels: listener.labels,
      takesJobs: listener.takesJobs !== false,
      runnerGroup: listener.runnerGroup,
      name: listener.name,
    };
    await getExternalWorkflowHandle(scaleSetListenerId(listener.pool))
      .signal(updateListenerSignal, args)
      .catch((err: unknown) => log.warn('scale-set listener did not take the settings', { pool: listener.pool, error: String(err) }));
  }

  /**
   * The pool is gone (or left scale-set mode): close the session and delete the scale set.
   * `heldScaleSetId`: the scale set the pool's listener reported holding a session on.
   */
  async finish(settings: PoolSettings, reason: string, heldScaleSetId?: number): Promise<void> {
    await getExternalWorkflowHandle(scaleSetListenerId(settings.name))
      .signal(stopListenerSignal, { deleteScaleSet: true, reason, ...(heldScaleSetId !== undefined ? { heldScaleSetId } : {}) })
      .catch((err: unknown) => log.info('no scale-set listener to stop', { pool: settings.name, detail: String(err) }));
  }
}
