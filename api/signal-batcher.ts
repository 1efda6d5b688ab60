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
 *
 * With a detour, a target that does not take a batch within `afterMs` is gone
 * around: the batch is handed to the detour (another workflow, which passes it
 * on later), and so is every batch for that target until the slow signal
 * returns. Measured (bench/README.md): a pool that continues as new while
 * carrying thousands of queued jobs refused or held signals for seconds, and
 * with one signal in flight every delivery behind it waited that long. The slow
 * signal is left to land: the pool drops jobs it already has, by job id.
 */
import { randomUUID } from 'node:crypto';
import { jsonBytes } from '../domain/json-size';

export interface Detour<T> {
  /** How long a signal to the target may take before its batch goes around. */
  afterMs: number;
  /**
   * Hands a batch to somewhere durable that passes it on to the target.
   * `spell` names the slow spell: the same for every batch while the target's
   * signal is out (renewed every `batchesPerSpell`), so they can share a place.
   */
  send: (workflowId: string, items: T[], spell: string) => Promise<void>;
  /** Bounds what one spell's place holds. */
  batchesPerSpell?: number;
  /**
   * Errors with which the target refuses signals for now (a pool whose
   * continue-as-new is being replayed): the batch goes around at once instead
   * of after `afterMs`, and so does every batch for the next `refusedForMs`.
   */
  refused?: (err: unknown) => boolean;
  refusedForMs?: number;
  /**
   * How to wait for the target when the detour itself fails after a refusal;
   * `send` again when absent. Meant to retry the refusal, which `send` may not.
   */
  waitForTarget?: (workflowId: string, items: T[]) => Promise<void>;
}

interface Waiting<T> {
  item: T;
  /** Its size as JSON, as it will travel in the signal. */
  bytes: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

interface Target<T> {
  waiting: Waiting<T>[];
  sending: boolean;
  /** Set while a signal to this target is out longer than the detour allows, or after a refusal. */
  slow?: Spell;
  /** The spell of the last refusal, taken up again if the target refuses once more before taking a signal. */
  refusedSpell?: Spell;
}

interface Spell {
  spell: string;
  batches: number;
}

export interface SignalBatcherOptions<T> {
  /** Keeps one signal well inside Temporal's 2 MB payload limit. */
  maxBatch?: number;
  /** The same by size: a batch's items come to at most this many bytes as JSON (one item always goes). */
  maxBatchBytes?: number;
  detour?: Detour<T>;
  /** Least time between the starts of two signals to one target; 0 sends as soon as the last returned. */
  paceMs?: number;
}

export class SignalBatcher<T> {
  private readonly targets = new Map<string, Target<T>>();
  private readonly maxBatch: number;
  private readonly maxBatchBytes: number;
  private readonly detour?: Detour<T>;
  private readonly paceMs: number;

  constructor(
    /** Sends one batch to one workflow; throws when the server did not accept it. */
    private readonly send: (workflowId: string, items: T[]) => Promise<void>,
    options: SignalBatcherOptions<T> = {},
  ) {
    this.maxBatch = options.maxBatch ?? 500;
    this.maxBatchBytes = options.maxBatchBytes ?? 1_000_000;
    this.detour = options.detour;
    this.paceMs = options.paceMs ?? 0;
  }

  add(workflowId: string, item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let target = this.targets.get(workflowId);
      if (!target) {
        target = { waiting: [], sending: false };
        this.targets.set(workflowId, target);
      }
      target.waiting.push({ item, bytes: jsonBytes(item), resolve, reject });
      if (!target.sending) void this.drain(workflowId, target);
    });
  }

  private async drain(workflowId: string, target: Target<T>): Promise<void> {
    target.sending = true;
    while (target.waiting.length > 0) {
      const batch = target.waiting.splice(0, this.batchLength(target.waiting));
      const leftAt = Date.now();
      try {
        await this.deliver(workflowId, target, batch.map((w) => w.item));
        for (const w of batch) w.resolve();
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
      // Still "sending" while the pace runs out: what arrives meanwhile joins the next batch.
      const rest = leftAt + this.paceMs - Date.now();
      if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
    }
    target.sending = false;
    this.forgetIfDone(workflowId, target);
  }

  /** How many of the waiting items the next signal takes: up to the count and the size, at least one. */
  private batchLength(waiting: readonly Waiting<T>[]): number {
    let bytes = 0;
    let n = 0;
    while (n < waiting.length && n < this.maxBatch) {
      bytes += waiting[n]!.bytes;
      if (n > 0 && bytes > this.maxBatchBytes) break;
      n++;
    }
    return n;
  }

  /** A target whose last answer was a refusal is kept (one small entry per such pool) so its spell is taken up again. */
  private forgetIfDone(workflowId: string, target: Target<T>): void {
    if (!target.sending && !target.slow && !target.refusedSpell && target.waiting.length === 0 && this.targets.get(workflowId) === target) this.targets.delete(workflowId);
  }

  private async deliver(workflowId: string, target: Target<T>, items: T[]): Promise<void> {
    const detour = this.detour;
    if (!detour) return this.send(workflowId, items);
    if (target.slow) return this.goAround(detour, workflowId, target, items);

    const sent = this.send(workflowId, items);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const first = await Promise.race([
      sent.then(
        () => 'settled' as const,
        () => 'settled' as const,
      ),
      new Promise<'slow'>((resolve) => (timer = setTimeout(() => resolve('slow'), detour.afterMs))),
    ]);
    clearTimeout(timer);
    if (first === 'settled') {
      try {
        await sent;
        target.refusedSpell = undefined;
        return;
      } catch (err) {
        if (!detour.refused?.(err)) throw err;
        // Refused outright: nothing of ours is in flight, so the spell ends by the clock and the
        // target is asked again. A target refusing for seconds (a replay) refuses many times over;
        // one place for the whole refusal keeps that to one relay.
        target.slow = target.refusedSpell ??= { spell: randomUUID(), batches: 0 };
        setTimeout(() => this.endSpell(workflowId, target), detour.refusedForMs ?? 100).unref();
        return this.goAround(detour, workflowId, target, items);
      }
    }

    target.slow = { spell: randomUUID(), batches: 0 };
    const over = (): void => this.endSpell(workflowId, target);
    sent.then(over, over);
    return this.goAround(detour, workflowId, target, items, sent);
  }

  private endSpell(workflowId: string, target: Target<T>): void {
    target.slow = undefined;
    this.forgetIfDone(workflowId, target);
  }

  /** Through the detour; should it fail, the target itself (however slow) is the way left. */
  private async goAround(detour: Detour<T>, workflowId: string, target: Target<T>, items: T[], sent?: Promise<void>): Promise<void> {
    const slow = target.slow!;
    if (++slow.batches > (detour.batchesPerSpell ?? 200)) {
      slow.spell = randomUUID();
      slow.batches = 1;
    }
    try {
      await detour.send(workflowId, items, slow.spell);
    } catch {
      await (sent ?? (detour.waitForTarget ?? this.send)(workflowId, items));
    }
  }
}
