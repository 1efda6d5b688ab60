/**
 * Lifecycle facts a runner workflow (and a scale-set listener) reports for metrics. Sinks leave no trace in
 * history and the worker calls them only on first execution, not on replay, so a
 * bootstrap or a forced delete is counted once.
 */
import { proxySinks, type Sinks } from '@temporalio/workflow';

export interface RunnerLabels {
  pool: string;
  provider: string;
}

export interface LifecycleSinks extends Sinks {
  runnerLifecycle: {
    /** The runner first reported idle (or took a job) `seconds` after its create began: what the bootstrap timeout bounds. */
    bootstrapped(labels: RunnerLabels & { seconds: number }): void;
    /** The runner took a job that had waited `queueSeconds` in GitHub's queue (GitHub's own created_at → started_at). */
    jobStarted(labels: RunnerLabels & { queueSeconds: number }): void;
    /** A forced delete (or cancellation) ended the runner; `leaked` when the provider did not confirm. */
    forceDeleted(labels: RunnerLabels & { leaked: boolean }): void;
  };
  scaleSetLifecycle: {
    /** A deleted pool's listener left its scale set at GitHub: another session still held it when its wait ended, or GitHub could not be asked until then. */
    left(labels: { pool: string }): void;
  };
}

export const { runnerLifecycle, scaleSetLifecycle } = proxySinks<LifecycleSinks>();
