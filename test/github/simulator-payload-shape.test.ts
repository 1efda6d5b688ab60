import { describe, expect, it } from 'vitest';
import type { SimJob } from '../../github/simulator/sim-state';
import { workflowJobPayload } from '../../github/simulator/workflow-job-payload';
import { workflowJobExamples } from './support/webhook-examples';

const job: SimJob = {
  id: 9000000001,
  runId: 4000000001,
  repository: 'octo-org/octo-repo',
  labels: ['self-hosted', 'linux'],
  name: 'build',
  workflowName: 'CI',
  event: 'push',
  status: 'in_progress',
  conclusion: null,
  plannedConclusion: 'success',
  durationMs: 10,
  runnerId: 3,
  runnerName: 'pool-a-1',
  runnerGroupId: 1,
  createdAt: '2024-05-01T10:00:00Z',
  startedAt: '2024-05-01T10:00:05Z',
};

const keys = (o: unknown): string[] => Object.keys(o as object).sort();

describe('simulated workflow_job payloads', () => {
  const queuedExample = workflowJobExamples().find((e) => e.source === 'api.github.com' && e.payload.action === 'queued' && e.payload.workflow_job.status === 'queued');

  it('have the fields of GitHub published queued example', () => {
    expect(queuedExample).toBeDefined();
    const ours = workflowJobPayload('queued', { ...job, status: 'queued' });
    expect(keys(ours.workflow_job)).toEqual(keys(queuedExample?.payload.workflow_job));
    expect(keys(ours.repository)).toEqual(keys(queuedExample?.payload.repository));
    expect(keys((ours.repository as { owner: unknown }).owner)).toEqual(keys((queuedExample?.payload.repository as { owner: unknown }).owner));
    expect(keys(ours.sender)).toEqual(keys(queuedExample?.payload.sender));
  });

  it('carry the runner only once the job runs', () => {
    const queued = workflowJobPayload('queued', { ...job, status: 'queued' }).workflow_job as Record<string, unknown>;
    const running = workflowJobPayload('in_progress', job).workflow_job as Record<string, unknown>;
    expect(queued.runner_name).toBeNull();
    expect(queued.runner_id).toBeNull();
    expect(running).toMatchObject({ runner_name: 'pool-a-1', runner_id: 3, runner_group_id: 1, status: 'in_progress' });
  });

  it('carry the conclusion on completed', () => {
    const done = workflowJobPayload('completed', { ...job, status: 'completed', conclusion: 'failure', completedAt: '2024-05-01T10:01:00Z' });
    expect(done.workflow_job).toMatchObject({ status: 'completed', conclusion: 'failure', completed_at: '2024-05-01T10:01:00Z' });
  });
});
