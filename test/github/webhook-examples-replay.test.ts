import { describe, expect, it } from 'vitest';
import { handleGitHubWebhook } from '../../api/webhooks/github';
import { RecentDeliveries } from '../../api/webhooks/recent-deliveries';
import { workflowJobExamples } from './support/webhook-examples';
import { RecordingSink } from './support/recording-sink';
import { WEBHOOK_SECRET, signedRequest } from './support/signed-request';

const examples = workflowJobExamples();

describe('replaying every published workflow_job example', () => {
  it('finds the examples, odd ones included', () => {
    expect(examples.length).toBeGreaterThanOrEqual(8);
    expect(examples.some((e) => e.payload.action === 'queued' && e.payload.workflow_job.status === 'waiting')).toBe(true);
    expect(examples.some((e) => e.payload.action === 'queued' && e.payload.workflow_job.runner_name)).toBe(true);
  });

  it.each(examples.map((e) => [`${e.source} #${e.index} ${e.payload.action}/${String(e.payload.workflow_job.status)}`, e] as const))(
    '%s',
    async (_name, example) => {
      const sink = new RecordingSink((name) => name === 'my runner');
      const res = await handleGitHubWebhook(signedRequest(example.payload, { deliveryId: `${example.source}-${example.index}` }), {
        secret: WEBHOOK_SECRET,
        sink,
        recentDeliveries: new RecentDeliveries(),
      });
      const body = (await res.json()) as { result: string };
      const wj = example.payload.workflow_job as { id: number; run_id: number; labels: string[]; runner_name: string | null; conclusion: string | null };
      switch (example.payload.action) {
        case 'queued':
          // Runner fields GitHub sometimes fills while queued are not read: the job goes to the queued seam only.
          expect(res.status).toBe(200);
          expect(sink.calls).toEqual([
            {
              kind: 'queued',
              job: expect.objectContaining({ jobId: wj.id, runId: wj.run_id, labels: wj.labels, deliveryId: `${example.source}-${example.index}` }) as unknown,
            },
          ]);
          break;
        case 'in_progress':
          expect(sink.calls).toEqual([{ kind: 'started', runnerName: wj.runner_name, args: { jobId: wj.id, runId: wj.run_id } }]);
          expect(body.result).toBe(wj.runner_name === 'my runner' ? 'signalled' : 'not_owned');
          expect(res.status).toBe(wj.runner_name === 'my runner' ? 200 : 202);
          break;
        case 'completed':
          expect(sink.calls).toEqual([{ kind: 'completed', runnerName: wj.runner_name, args: { jobId: wj.id, conclusion: wj.conclusion } }]);
          expect(res.status).toBe(202);
          expect(body.result).toBe('not_owned');
          break;
        default:
          expect(res.status).toBe(202);
          expect(body.result).toBe('ignored');
          expect(sink.calls).toEqual([]);
      }
    },
  );
});
