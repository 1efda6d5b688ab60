/**
 * Coalesces signals bound for one workflow. Every signal to a workflow is a
 * write to that one workflow's history, serialised by the server, so a
 * thousand webhooks a second signalled one by one into a pool queue up behind
 * each other. Here each target has at most one signal in flight; whatever
 * arrives meanwhile leaves as one signal when it returns. Under light load a
 * batch is one item and nothing waits; under heavy load batches grow instead of
 * queues. Each caller's promise settles when the signal carrying its item was
 * accepted by the server (durably recorded) or failed: an HTTP answer given
 * after it is a promise kept.
 */

interface Waiting<T> {
  item: T;
  resolve: () => void;
  reject: (err: unknown) => void;
}

interface Target<T> {
  waiting: Waiting<T>[];
  sending: boolean;
}

export class SignalBatcher<T> {
  private readonly targets = new Map<string, Target<T>>();

  constructor(
    /** Sends one batch to one workflow; throws when the server did not accept it. */
    private readonly send: (workflowId: string, items: T[]) => Promise<void>,
    /** Keeps one signal well inside Temporal's 2 MB payload limit. */
    private readonly maxBatch = 500,
  ) {}

  add(workflowId: string, item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let target = this.targets.get(workflowId);
      if (!target) {
        target = { waiting: [], sending: false };
        this.targets.set(workflowId, target);
      }
      target.waiting.push({ item, resolve, reject });
      if (!target.sending) void this.drain(workflowId, target);
    });
  }

  private async drain(workflowId: string, target: Target<T>): Promise<void> {
    target.sending = true;
    while (target.waiting.length > 0) {
      const batch = target.waiting.splice(0, this.maxBatch);
      try {
        await this.send(workflowId, batch.map((w) => w.item));
        for (const w of batch) w.resolve();
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
    target.sending = false;
    this.targets.delete(workflowId);
  }
}
