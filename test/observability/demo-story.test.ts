import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { inTellingOrder, startDemoStory, storyEmitter, storyLine, summaryGate, type StoryEvent } from '../../devstack/demo-story';
import { createLogger } from '../../observability/logger';
import { api, e2ePool, useE2EStack } from '../e2e/stack';
import { eventually } from '../support/temporal';

const stack = useE2EStack({ jobDurationMs: 500 });
const stops: Array<() => void> = [];
afterAll(() => stops.forEach((stop) => stop()));

describe('the demo story', () => {
  it('tells a real job run: queued, runner requested/created/took it, started with its queue time, finished, runner removed, summaries', async () => {
    const pool = e2ePool('story');
    expect((await api(stack, 'POST', '/api/v1/pools', pool)).status).toBe(201);
    const events: StoryEvent[] = [];
    const lines: string[] = [];
    const human = storyEmitter('pretty', createLogger({ format: 'json' }), (line) => lines.push(line));
    stops.push(
      startDemoStory({
        client: stack.client,
        pool: pool.name,
        jobs: () => stack.sim.jobs().filter((j) => j.repository === 'acme/story'),
        emit: (e) => {
          events.push(e);
          human(e);
        },
        pollMs: 200,
        summaryEveryMs: 500,
      }),
    );
    const job = stack.sim.queueJob({ repository: 'acme/story', labels: ['self-hosted', 'linux', 'story'], name: 'build' });
    await eventually(() => events.some((e) => e.kind === 'runner_removed'), 45_000, 'the runner removed');
    await eventually(() => events.some((e) => e.kind === 'summary' && e.jobs.done === 1), 5_000, 'a summary counting the job done');

    const kinds: string[] = events.filter((e) => e.kind !== 'summary').map((e) => e.kind);
    const order = ['job_queued', 'runner_requested', 'runner_created', 'job_started', 'job_finished', 'runner_removed'] as const;
    for (const kind of order) expect(kinds, kind).toContain(kind);
    const first = (kind: string) => kinds.indexOf(kind);
    expect(first('job_queued')).toBeLessThan(first('job_started'));
    expect(first('runner_requested')).toBeLessThan(first('runner_created'));
    expect(first('job_started')).toBeLessThan(first('job_finished'));
    expect(first('runner_created')).toBeLessThan(first('runner_removed'));

    const started = events.find((e) => e.kind === 'job_started');
    expect(started).toMatchObject({ jobId: job.id, job: 'build' });
    expect(started?.kind === 'job_started' && started.queueSeconds).toBeGreaterThanOrEqual(0);
    const created = events.find((e) => e.kind === 'runner_created');
    expect(created?.kind === 'runner_created' && created.createSeconds).toBeGreaterThanOrEqual(0);
    expect(lines.join('\n')).toMatch(/runnerflow: job build started on \S+ after \d+\.\d s in the queue/);
    expect(lines.join('\n')).toMatch(/runnerflow: runner \S+ created in \d+\.\d s/);
    expect(lines.join('\n')).toMatch(/runnerflow: job build finished: success/);
    expect(lines.join('\n')).toMatch(/── runners: .* │ jobs: 0 queued, 0 running, 1 done │ p50 queue-to-start \d+\.\d s/);
    // Nothing left in the pool: the last summary counts no runners.
    await eventually(() => {
      const last = events.filter((e) => e.kind === 'summary').at(-1);
      return last?.kind === 'summary' && Object.keys(last.runners).length === 0;
    }, 5_000, 'an empty pool in the summary');
  });

  it('tells what one look saw in the order it happened: a runner is created before a job starts on it', () => {
    const seen: StoryEvent[] = [
      { kind: 'job_started', job: 'build', jobId: 1, runner: 'r-1', queueSeconds: 1.4 },
      { kind: 'job_queued', job: 'test', jobId: 2 },
      { kind: 'runner_removed', runner: 'r-0' },
      { kind: 'runner_took_job', runner: 'r-1', jobId: 1 },
      { kind: 'runner_requested', runner: 'r-1' },
      { kind: 'runner_requested', runner: 'r-2' },
      { kind: 'runner_created', runner: 'r-1', createSeconds: 0.1 },
    ];
    expect(inTellingOrder(seen).map((e) => ('runner' in e && e.kind.startsWith('runner') ? `${e.kind} ${e.runner}` : e.kind))).toEqual([
      'job_queued',
      'runner_requested r-1',
      'runner_requested r-2',
      'runner_created r-1',
      'runner_took_job r-1',
      'job_started',
      'runner_removed r-0',
    ]);
  });

  it('repeats an unchanged summary only after a quiet while', () => {
    const gate = summaryGate(60_000);
    const quiet: StoryEvent = { kind: 'summary', runners: { idle: 1 }, jobs: { queued: 0, running: 0, done: 3 }, p50QueueSeconds: 1.5 };
    const busy: StoryEvent = { kind: 'summary', runners: { idle: 1, busy: 1 }, jobs: { queued: 0, running: 1, done: 3 }, p50QueueSeconds: 1.5 };
    expect([0, 5_000, 10_000, 59_000].map((t) => gate(quiet, t))).toEqual([true, false, false, false]);
    expect(gate(quiet, 60_000)).toBe(true);
    expect(gate(busy, 61_000)).toBe(true);
    expect(gate(quiet, 62_000)).toBe(true);
  });

  it('emits structured demo events for JSON logs', () => {
    const out: string[] = [];
    const logger = createLogger({ format: 'json', destination: new Writable({ write: (c: Buffer, _e, done) => (out.push(c.toString()), done()) }) });
    const emit = storyEmitter('json', logger.child({ component: 'demo' }), () => {
      throw new Error('no human lines in JSON mode');
    });
    const event: StoryEvent = { kind: 'job_started', job: 'build', jobId: 42, runner: 'r-1', queueSeconds: 1.25 };
    emit(event);
    const line = JSON.parse(out[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 'info', component: 'demo', event: 'job_started', job: 'build', jobId: 42, runner: 'r-1', queueSeconds: 1.25, message: storyLine(event) });
  });
});
