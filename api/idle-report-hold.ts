/**
 * An agent reports `idle` moments before GitHub hands its runner a job, and the
 * job's start says all that `idle` would (the agent is up and registered). Each
 * of the two is a signal and a workflow task for the runner, and a report for its
 * pool: an ephemeral runner hears three signals in its life, and this is one of
 * them. So an `idle` report waits here, for at most `holdMs`, for its runner's
 * job to start; the `jobStarted` signal then carries both, and the agent's
 * callback is answered once that signal is taken. A report whose job does not
 * start in time (a runner kept idle for later jobs, a lost webhook) is
 * signalled on its own, as it would have been at once.
 *
 * Nothing is acknowledged before it is in the workflow's history: a callback is
 * answered only once its news was delivered, so an API process that dies while
 * holding one loses nothing the agent's own retry does not bring back. Where
 * several API processes serve, a callback and a webhook that reach different
 * ones are signalled separately, as without the hold.
 */

/** What the caller of `jobStarting` says once its `jobStarted` signal has been tried. */
export interface CarriedReport {
  /** The runner took the `jobStarted` signal: the held report is answered without a signal of its own. */
  delivered(): void;
  /** It did not (an error, or no such runner): the held report is signalled on its own now. */
  notDelivered(): void;
}

export interface IdleReportHoldOptions {
  /** Longest wait for a job start; 0 signals every report at once. */
  holdMs: number;
  /** Reports held at once beyond which new ones are signalled at once: memory stays bounded in a storm. */
  maxHeld?: number;
}

interface Held {
  deliver: () => Promise<void>;
  settle: (outcome: Promise<void>) => void;
  timer: ReturnType<typeof setTimeout>;
}

const DEFAULT_MAX_HELD = 10_000;

export class IdleReportHold {
  private readonly held = new Map<string, Held>();
  /** Runners whose job start was delivered, until when an `idle` from them says nothing new. In expiry order. */
  private readonly started = new Map<string, number>();
  /** Runners whose `jobStarted` signal is in flight: whether it was delivered. */
  private readonly starting = new Map<string, Promise<boolean>>();
  private readonly maxHeld: number;

  constructor(private readonly options: IdleReportHoldOptions) {
    this.maxHeld = options.maxHeld ?? DEFAULT_MAX_HELD;
  }

  get heldCount(): number {
    return this.held.size;
  }

  /**
   * Resolves once the runner has the news: carried by its job start, or by
   * `deliver` (whose failure this rejects with). A report that comes after its
   * runner's job start was delivered is already known to the workflow, which
   * ignores `idle` from a busy runner: it is answered without a signal.
   */
  report(runner: string, deliver: () => Promise<void>): Promise<void> {
    if (this.options.holdMs <= 0) return deliver();
    this.forgetExpiredStarts();
    if (this.started.has(runner)) return Promise.resolve();
    // The job start is on its way (GitHub's webhook beat the agent's call): it carries this
    // report if it lands, and the report goes on its own if it does not.
    const starting = this.starting.get(runner);
    if (starting) return starting.then((carried) => (carried ? undefined : deliver()));
    if (this.held.size >= this.maxHeld) return deliver();
    const earlier = this.held.get(runner);
    return new Promise<void>((resolve, reject) => {
      const settle = (outcome: Promise<void>): void => void outcome.then(resolve, reject);
      // The agent asked again (its first answer was lost): the one still held answers both.
      if (earlier) {
        const settleEarlier = earlier.settle;
        earlier.settle = (outcome) => {
          settleEarlier(outcome);
          settle(outcome);
        };
        return;
      }
      const timer = setTimeout(() => void this.release(runner), this.options.holdMs);
      this.held.set(runner, { deliver, settle, timer });
    });
  }

  /**
   * A `jobStarted` signal for `runner` is about to be sent. Returns how to settle
   * the report it carries, if one is held; either way the runner is remembered
   * as started once the caller says the signal was delivered.
   */
  jobStarting(runner: string): CarriedReport | undefined {
    if (this.options.holdMs <= 0) return undefined;
    const held = this.take(runner);
    let settled = false;
    let landed!: (carried: boolean) => void;
    const outcome = new Promise<boolean>((resolve) => (landed = resolve));
    this.starting.set(runner, outcome);
    const settle = (carried: boolean): void => {
      if (settled) return;
      settled = true;
      if (this.starting.get(runner) === outcome) this.starting.delete(runner);
      if (carried) this.rememberStarted(runner);
      landed(carried);
      held?.settle(carried ? Promise.resolve() : held.deliver());
    };
    return { delivered: () => settle(true), notDelivered: () => settle(false) };
  }

  /**
   * Signals `runner`'s held report now and waits for it: a later report (`failed`) must not be
   * overtaken by an `idle` released after it. The held report's own failure is its caller's.
   */
  async releaseBefore(runner: string): Promise<void> {
    await this.release(runner)?.catch(() => undefined);
  }

  /** Signals every held report now (the API is stopping: its callbacks are answered before it goes). */
  releaseAll(): void {
    for (const runner of [...this.held.keys()]) void this.release(runner);
  }

  /** Signals `runner`'s held report now; its delivery, if one was held. */
  private release(runner: string): Promise<void> | undefined {
    const held = this.take(runner);
    if (!held) return undefined;
    const delivered = held.deliver();
    held.settle(delivered);
    return delivered;
  }

  private take(runner: string): Held | undefined {
    const held = this.held.get(runner);
    if (!held) return undefined;
    this.held.delete(runner);
    clearTimeout(held.timer);
    return held;
  }

  private rememberStarted(runner: string): void {
    this.forgetExpiredStarts();
    // Re-inserted, so the map stays in expiry order.
    this.started.delete(runner);
    this.started.set(runner, Date.now() + this.options.holdMs);
    if (this.started.size > this.maxHeld) this.started.delete(this.started.keys().next().value as string);
  }

  private forgetExpiredStarts(): void {
    const now = Date.now();
    for (const [runner, until] of this.started) {
      if (until > now) break;
      this.started.delete(runner);
    }
  }
}
