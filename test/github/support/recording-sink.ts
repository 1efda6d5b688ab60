import type { SignalOutcome, WorkflowJobSink } from '../../../api/webhooks/github';
import type { JobCompletedArgs, JobStartedArgs } from '../../../workflows/messages';
import type { QueuedJob } from '../../../workflows/pool-messages';

export type SinkCall =
  | { kind: 'queued'; job: QueuedJob & { deliveryId: string } }
  | { kind: 'started'; runnerName: string; args: JobStartedArgs }
  | { kind: 'completed'; runnerName: string; args: JobCompletedArgs }
  | { kind: 'left_queue'; jobId: number; conclusion?: string };

/** Records every call; runners named in `owned` count as runnerflow's. */
export class RecordingSink implements WorkflowJobSink {
  readonly calls: SinkCall[] = [];
  failNext = false;

  constructor(private readonly owned: (runnerName: string) => boolean = () => true) {}

  async jobQueued(job: QueuedJob & { deliveryId: string }): Promise<void> {
    this.maybeFail();
    this.calls.push({ kind: 'queued', job });
  }

  async jobStarted(runnerName: string, args: JobStartedArgs): Promise<SignalOutcome> {
    this.maybeFail();
    this.calls.push({ kind: 'started', runnerName, args });
    return this.owned(runnerName) ? 'signalled' : 'not_owned';
  }

  async jobCompleted(runnerName: string, args: JobCompletedArgs): Promise<SignalOutcome> {
    this.maybeFail();
    this.calls.push({ kind: 'completed', runnerName, args });
    return this.owned(runnerName) ? 'signalled' : 'not_owned';
  }

  async jobLeftQueue(job: { jobId: number; conclusion?: string }): Promise<void> {
    this.calls.push({ kind: 'left_queue', jobId: job.jobId, conclusion: job.conclusion });
  }

  private maybeFail(): void {
    if (!this.failNext) return;
    this.failNext = false;
    throw new Error('temporal unavailable');
  }
}
