/**
 * The part of a `workflow_job` delivery runnerflow relies on. Everything else
 * GitHub sends is allowed and ignored; what is here must be right or the
 * delivery is refused with the field named.
 */
import { z } from 'zod';
import { jsonBytes } from '../../domain/json-size';
import { MAX_LABEL_LENGTH, MAX_POOL_LABELS, MAX_RUNNER_SETTINGS_BYTES } from '../../domain/pool';

/**
 * A job with a label longer than a pool's can be, or with far more labels or label bytes than a
 * pool can have, is no pool's. Bounded here, such a delivery is refused at once, saying why,
 * instead of travelling as a signal too large for the server and failing after its retries.
 * The count and the bytes leave room for the labels GitHub adds to a job's own.
 */
const MAX_JOB_LABELS = 2 * MAX_POOL_LABELS;
const MAX_JOB_LABELS_BYTES = MAX_RUNNER_SETTINGS_BYTES + 1024;

/** Names, times and outcomes GitHub sends are short; one far longer is not GitHub's, and would travel in signals. */
const short = (max: number) => z.string().max(max, `longer than ${max} characters`);

export const workflowJobEventSchema = z.object({
  action: short(64).min(1),
  workflow_job: z.object({
    id: z.number().int().positive(),
    run_id: z.number().int().positive().optional(),
    labels: z
      .array(z.string().max(MAX_LABEL_LENGTH, `longer than ${MAX_LABEL_LENGTH} characters, the longest label a pool can have`))
      .max(MAX_JOB_LABELS, `more than ${MAX_JOB_LABELS} labels; a pool has at most ${MAX_POOL_LABELS}, so none could take this job`)
      .refine((labels) => jsonBytes(labels) <= MAX_JOB_LABELS_BYTES, {
        message: `more than ${MAX_JOB_LABELS_BYTES} bytes of labels as JSON; a pool's come to at most ${MAX_RUNNER_SETTINGS_BYTES / 1024} KiB, so none could take this job`,
      }),
    status: short(64).optional(),
    conclusion: short(64).nullable().optional(),
    created_at: short(64).optional(),
    started_at: short(64).nullable().optional(),
    // GitHub fills runner fields in odd places (queued events included); only in_progress/completed read them.
    runner_id: z.number().int().nullable().optional(),
    runner_name: short(256).nullable().optional(),
  }),
  repository: z.object({ full_name: short(256) }).optional(),
});

export type WorkflowJobEvent = z.infer<typeof workflowJobEventSchema>;

export function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.map(String).join('.') || '(body)'}: ${issue.message}`).join('; ');
}
