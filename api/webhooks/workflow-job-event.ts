/**
 * The part of a `workflow_job` delivery runnerflow relies on. Everything else
 * GitHub sends is allowed and ignored; what is here must be right or the
 * delivery is refused with the field named.
 */
import { z } from 'zod';

/**
 * A pool has at most 100 labels of at most 256 characters; a job with a label past that, or
 * with far more labels, is no pool's. Bounded here, such a delivery is refused at once, saying
 * why, instead of travelling as a signal too large for the server and failing after its retries.
 */
const MAX_JOB_LABEL_LENGTH = 256;
const MAX_JOB_LABELS = 200;

export const workflowJobEventSchema = z.object({
  action: z.string().min(1),
  workflow_job: z.object({
    id: z.number().int().positive(),
    run_id: z.number().int().positive().optional(),
    labels: z
      .array(z.string().max(MAX_JOB_LABEL_LENGTH, `longer than ${MAX_JOB_LABEL_LENGTH} characters, the longest label a pool can have`))
      .max(MAX_JOB_LABELS, `more than ${MAX_JOB_LABELS} labels; a pool has at most 100, so none could take this job`),
    status: z.string().optional(),
    conclusion: z.string().nullable().optional(),
    created_at: z.string().optional(),
    started_at: z.string().nullable().optional(),
    // GitHub fills runner fields in odd places (queued events included); only in_progress/completed read them.
    runner_id: z.number().int().nullable().optional(),
    runner_name: z.string().nullable().optional(),
  }),
  repository: z.object({ full_name: z.string() }).optional(),
});

export type WorkflowJobEvent = z.infer<typeof workflowJobEventSchema>;

export function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.map(String).join('.') || '(body)'}: ${issue.message}`).join('; ');
}
