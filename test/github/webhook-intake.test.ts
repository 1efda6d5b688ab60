import { describe, expect, it } from 'vitest';
import { handleGitHubWebhook, type GitHubWebhookDeps } from '../../api/webhooks/github';
import { RecentDeliveries } from '../../api/webhooks/recent-deliveries';
import { webhookDeliveries } from '../../observability/metrics';
import { RecordingSink } from './support/recording-sink';
import { WEBHOOK_SECRET, signedRequest } from './support/signed-request';

function deps(sink = new RecordingSink(), extra: Partial<GitHubWebhookDeps> = {}): GitHubWebhookDeps {
  return { secret: WEBHOOK_SECRET, sink, recentDeliveries: new RecentDeliveries(), ...extra };
}

const job = (action: string, fields: Record<string, unknown> = {}) => ({
  action,
  workflow_job: { id: 42, run_id: 7, labels: ['self-hosted', 'linux'], status: action, runner_name: null, created_at: '2024-05-01T10:00:00Z', ...fields },
  repository: { full_name: 'octo-org/octo-repo' },
});

async function errorOf(res: Response): Promise<{ code: string; message: string }> {
  const body = (await res.json()) as { error: { code: string; message: string } };
  return body.error;
}

describe('webhook intake: rejections', () => {
  it('401 without a signature, and nothing reaches the sink', async () => {
    const sink = new RecordingSink();
    const res = await handleGitHubWebhook(signedRequest(job('queued'), { signature: null }), deps(sink));
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe('missing_signature');
    expect(sink.calls).toEqual([]);
  });

  it('401 on a wrong signature, and nothing reaches the sink', async () => {
    const sink = new RecordingSink();
    const res = await handleGitHubWebhook(signedRequest(job('queued'), { secret: 'not the secret' }), deps(sink));
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe('invalid_signature');
    expect(sink.calls).toEqual([]);
  });

  it('counts deliveries under a few event names, whatever the unsigned header says', async () => {
    const events = async () => new Set((await webhookDeliveries.get()).values.map((v) => String(v.labels.event)));
    for (let i = 0; i < 50; i++) {
      await handleGitHubWebhook(signedRequest(job('queued'), { signature: null, event: `made-up-${i}-${'e'.repeat(1_000)}` }), deps());
    }
    await handleGitHubWebhook(signedRequest({ zen: 'hi' }, { event: 'push' }), deps());
    expect([...(await events())].filter((e) => !['workflow_job', 'ping', 'other', 'unknown'].includes(e))).toEqual([]);
    expect(await events()).toContain('other');
  });

  it('401 on a malformed signature header', async () => {
    const res = await handleGitHubWebhook(signedRequest(job('queued'), { signature: 'sha256=zz' }), deps());
    expect(res.status).toBe(401);
  });

  it('401 when no secret is configured, whatever the signature', async () => {
    const sink = new RecordingSink();
    const res = await handleGitHubWebhook(signedRequest(job('queued'), { secret: '' }), deps(sink, { secret: '' }));
    expect(res.status).toBe(401);
    expect(sink.calls).toEqual([]);
  });

  it('401 when the signed body was altered', async () => {
    const original = signedRequest(job('queued'));
    const tampered = new Request(original.url, {
      method: 'POST',
      headers: original.headers,
      body: JSON.stringify(job('queued', { id: 43 })),
    });
    expect((await handleGitHubWebhook(tampered, deps())).status).toBe(401);
  });

  it('413 from Content-Length before reading', async () => {
    const sink = new RecordingSink();
    const req = signedRequest(job('queued'), { headers: { 'content-length': String(26 * 1024 * 1024) } });
    const res = await handleGitHubWebhook(req, deps(sink));
    expect(res.status).toBe(413);
    expect((await errorOf(res)).code).toBe('payload_too_large');
    expect(sink.calls).toEqual([]);
  });

  it('413 from the bytes actually read when no length is declared', async () => {
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 10) controller.close();
        else {
          sent += 1;
          controller.enqueue(chunk);
        }
      },
    });
    const req = new Request('http://127.0.0.1/webhooks/github', {
      method: 'POST',
      headers: { 'x-github-event': 'workflow_job', 'x-github-delivery': 'd-stream', 'x-hub-signature-256': 'sha256=00' },
      body: stream,
      duplex: 'half',
    } as RequestInit & { duplex: 'half' });
    const res = await handleGitHubWebhook(req, deps(new RecordingSink(), { maxBodyBytes: 256 * 1024 }));
    expect(res.status).toBe(413);
    expect(sent).toBeLessThan(10);
  });

  it('400 without X-GitHub-Event', async () => {
    const req = signedRequest(job('queued'));
    req.headers.delete('x-github-event');
    const res = await handleGitHubWebhook(req, deps());
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain('X-GitHub-Event');
  });

  it('400 without X-GitHub-Delivery', async () => {
    const req = signedRequest(job('queued'));
    req.headers.delete('x-github-delivery');
    const res = await handleGitHubWebhook(req, deps());
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain('X-GitHub-Delivery');
  });

  it('400 on malformed JSON', async () => {
    const res = await handleGitHubWebhook(signedRequest('{"action": "queued", '), deps());
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe('invalid_json');
  });

  it('400 naming a missing field', async () => {
    const body = job('queued');
    delete (body.workflow_job as Record<string, unknown>).id;
    const res = await handleGitHubWebhook(signedRequest(body), deps());
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error.code).toBe('invalid_payload');
    expect(error.message).toContain('workflow_job.id');
  });

  it('400 at once for labels no pool could have, saying why, and nothing reaches the sink', async () => {
    const sink = new RecordingSink();
    const long = await handleGitHubWebhook(signedRequest(job('queued', { labels: ['self-hosted', 'x'.repeat(3_000_000)] })), deps(sink));
    expect(long.status).toBe(400);
    expect((await errorOf(long)).message).toContain('workflow_job.labels.1: longer than 256 characters, the longest label a pool can have');
    const many = await handleGitHubWebhook(signedRequest(job('queued', { labels: Array.from({ length: 201 }, (_, i) => `l${i}`) })), deps(sink));
    expect(many.status).toBe(400);
    expect((await errorOf(many)).message).toContain('more than 200 labels');
    const heavy = await handleGitHubWebhook(signedRequest(job('queued', { labels: Array.from({ length: 40 }, (_, i) => `${i}-${'l'.repeat(250)}`) })), deps(sink));
    expect((await errorOf(heavy)).message).toContain('more than 9216 bytes of labels');
    expect(sink.calls).toEqual([]);
  });

  it('400 at once for names, times and outcomes far longer than GitHub sends', async () => {
    const sink = new RecordingSink();
    const cases: [Record<string, unknown>, string][] = [
      [{ created_at: `2024-05-01T10:00:00Z (${'c'.repeat(3_000_000)})` }, 'workflow_job.created_at: longer than 64 characters'],
      [{ runner_name: 'r'.repeat(10_000) }, 'workflow_job.runner_name: longer than 256 characters'],
      [{ conclusion: 'x'.repeat(1_000) }, 'workflow_job.conclusion: longer than 64 characters'],
    ];
    for (const [fields, message] of cases) {
      const res = await handleGitHubWebhook(signedRequest(job('completed', fields)), deps(sink));
      expect(res.status).toBe(400);
      expect((await errorOf(res)).message).toBe(message);
    }
    const repo = await handleGitHubWebhook(signedRequest({ ...job('queued'), repository: { full_name: 'o/'.repeat(1_000) } }), deps(sink));
    expect((await errorOf(repo)).message).toBe('repository.full_name: longer than 256 characters');
    expect(sink.calls).toEqual([]);
  });

  it('hands on a queued job whose time is unreadable without that time, rather than one its pool would drop', async () => {
    const sink = new RecordingSink();
    const res = await handleGitHubWebhook(signedRequest(job('queued', { created_at: 'not a date' })), deps(sink));
    expect(res.status).toBe(200);
    expect(sink.calls).toEqual([{ kind: 'queued', job: expect.objectContaining({ jobId: 42, queuedAt: undefined }) }]);
  });

  it('400 naming a field of the wrong type', async () => {
    const res = await handleGitHubWebhook(signedRequest(job('queued', { labels: 'self-hosted' })), deps());
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain('workflow_job.labels');
  });

  it('400 without workflow_job at all', async () => {
    const res = await handleGitHubWebhook(signedRequest({ action: 'queued' }), deps());
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain('workflow_job');
  });
});

describe('webhook intake: events', () => {
  it('answers ping with 200', async () => {
    const res = await handleGitHubWebhook(signedRequest({ zen: 'Design for failure.', hook_id: 1 }, { event: 'ping' }), deps());
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ result: 'pong' });
  });

  it('acknowledges other events with 202 and calls nothing', async () => {
    const sink = new RecordingSink();
    const res = await handleGitHubWebhook(signedRequest({ action: 'opened' }, { event: 'issues' }), deps(sink));
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ result: 'ignored', event: 'issues' });
    expect(sink.calls).toEqual([]);
  });

  it('hands a queued job to the queued seam', async () => {
    const sink = new RecordingSink();
    const res = await handleGitHubWebhook(signedRequest(job('queued'), { deliveryId: 'd-q' }), deps(sink));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ result: 'queued' });
    expect(sink.calls).toEqual([
      {
        kind: 'queued',
        job: { jobId: 42, runId: 7, labels: ['self-hosted', 'linux'], repository: 'octo-org/octo-repo', queuedAt: '2024-05-01T10:00:00Z', deliveryId: 'd-q' },
      },
    ]);
  });

  it('signals the runner on in_progress and completed', async () => {
    const sink = new RecordingSink();
    const d = deps(sink);
    expect((await handleGitHubWebhook(signedRequest(job('in_progress', { runner_name: 'pool-a-1', runner_id: 9 })), d)).status).toBe(200);
    const done = await handleGitHubWebhook(signedRequest(job('completed', { runner_name: 'pool-a-1', conclusion: 'success' })), d);
    expect(await done.json()).toEqual({ result: 'signalled' });
    expect(sink.calls).toEqual([
      { kind: 'started', runnerName: 'pool-a-1', args: { jobId: 42, runId: 7 } },
      { kind: 'completed', runnerName: 'pool-a-1', args: { jobId: 42, conclusion: 'success' } },
    ]);
  });

  it('acknowledges runners it does not own with 202', async () => {
    const sink = new RecordingSink(() => false);
    const res = await handleGitHubWebhook(signedRequest(job('in_progress', { runner_name: 'GitHub Actions 5' })), deps(sink));
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ result: 'not_owned' });
  });

  it('acknowledges a completed job that never had a runner, and tells the queue it left', async () => {
    const sink = new RecordingSink();
    const res = await handleGitHubWebhook(signedRequest(job('completed', { conclusion: 'cancelled' })), deps(sink));
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ result: 'no_runner' });
    expect(sink.calls).toEqual([{ kind: 'left_queue', jobId: 42, conclusion: 'cancelled' }]);
  });

  it('ignores workflow_job actions it has no use for', async () => {
    const sink = new RecordingSink();
    const res = await handleGitHubWebhook(signedRequest(job('waiting')), deps(sink));
    expect(res.status).toBe(202);
    expect(sink.calls).toEqual([]);
  });
});

describe('webhook intake: redeliveries', () => {
  it('answers a duplicate delivery with 202 duplicate without calling the sink again', async () => {
    const sink = new RecordingSink();
    const d = deps(sink);
    const first = await handleGitHubWebhook(signedRequest(job('queued'), { deliveryId: 'dup-1' }), d);
    const again = await handleGitHubWebhook(signedRequest(job('queued'), { deliveryId: 'dup-1' }), d);
    expect(first.status).toBe(200);
    expect(again.status).toBe(202);
    expect(await again.json()).toEqual({ result: 'duplicate' });
    expect(sink.calls).toHaveLength(1);
  });

  it('does not remember a delivery the sink failed on, so its redelivery is handled', async () => {
    const sink = new RecordingSink();
    sink.failNext = true;
    const d = deps(sink);
    const failed = await handleGitHubWebhook(signedRequest(job('queued'), { deliveryId: 'retry-1' }), d);
    expect(failed.status).toBe(500);
    expect((await errorOf(failed)).code).toBe('sink_failed');
    const redelivered = await handleGitHubWebhook(signedRequest(job('queued'), { deliveryId: 'retry-1' }), d);
    expect(redelivered.status).toBe(200);
    expect(sink.calls).toHaveLength(1);
  });

  it('forgets the oldest ids beyond its capacity', () => {
    const recent = new RecentDeliveries(2);
    recent.add('a');
    recent.add('b');
    recent.add('c');
    expect(recent.has('a')).toBe(false);
    expect(recent.has('b')).toBe(true);
    expect(recent.has('c')).toBe(true);
    expect(recent.size).toBe(2);
  });
});
