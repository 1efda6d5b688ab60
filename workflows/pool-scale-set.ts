/**
 * The runnerPool's seam to its scale-set listener (pools in `scaleSet` mode):
 * starts it as an abandoned child with a fixed id (so there is never a second
 * one), forwards settings changes, and stops it (deleting the scale set) when
 * the pool ends. Kept apart from the pool loop so the two evolve independently.
 */
import { getExternalWorkflowHandle, log, ParentClosePolicy, patched, startChild, WorkflowIdReusePolicy, workflowInfo } from '@temporalio/workflow';
import type { PoolSettings } from '../domain/pool';
import { scaleSetNameOf, sessionOwnerName } from '../domain/scale-set';
import type { InstanceTimings } from '../domain/timings';
import { scaleSetListener } from './scale-set-listener';
import { scaleSetListenerId, stopListenerSignal, updateListenerSignal, type ScaleSetListenerSettings } from './scale-set-messages';

export function listenerSettingsOf(settings: PoolSettings, installation: string): ScaleSetListenerSettings {
  return {
    pool: settings.name,
    target: { credentials: settings.github.credentials, scope: settings.github.scope },
    name: scaleSetNameOf(settings),
    runnerGroup: settings.runnerGroup,
    labels: settings.labels,
    minRunners: settings.scaleSet?.minRunners ?? 0,
    maxRunners: settings.maxRunners,
    ownerName: sessionOwnerName(installation, settings.name),
  };
}

export class PoolScaleSet {
  private started = false;
  private sentVersion = 0;

  constructor(private readonly timings: InstanceTimings) {}

  /** Starts the listener once per run and forwards newer settings; a no-op for webhook pools. */
  async sync(settings: PoolSettings, settingsVersion: number, deleting: boolean): Promise<void> {
    if (settings.mode !== 'scaleSet' || deleting) return;
    const listener = listenerSettingsOf(settings, workflowInfo().taskQueue);
    if (!this.started) {
      this.started = true;
      this.sentVersion = settingsVersion;
      try {
        await startChild(scaleSetListener, {
          workflowId: scaleSetListenerId(settings.name),
          args: [{ settings: listener, timings: this.timings }],
          parentClosePolicy: ParentClosePolicy.ABANDON,
          workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
        });
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
    await getExternalWorkflowHandle(scaleSetListenerId(settings.name))
      .signal(updateListenerSignal, { minRunners: listener.minRunners, maxRunners: listener.maxRunners, labels: listener.labels })
      .catch((err: unknown) => log.warn('scale-set listener did not take the settings', { pool: settings.name, error: String(err) }));
  }

  /** The pool is gone (or left scale-set mode): close the session and delete the scale set. */
  async finish(settings: PoolSettings, reason: string): Promise<void> {
    await getExternalWorkflowHandle(scaleSetListenerId(settings.name))
      .signal(stopListenerSignal, { deleteScaleSet: true, reason })
      .catch((err: unknown) => log.info('no scale-set listener to stop', { pool: settings.name, detail: String(err) }));
  }
}
