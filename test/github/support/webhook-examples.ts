import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export interface WebhookExample {
  /** Which GitHub flavour the example is from (api.github.com, ghes-35, ...). */
  source: string;
  index: number;
  payload: Record<string, unknown> & { action: string; workflow_job: Record<string, unknown> };
}

/** Every `workflow_job` example GitHub publishes, from every flavour in @octokit/webhooks-examples. */
export function workflowJobExamples(): WebhookExample[] {
  const root = dirname(createRequire(import.meta.url).resolve('@octokit/webhooks-examples/package.json'));
  const out: WebhookExample[] = [];
  for (const source of readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name)) {
    const events = JSON.parse(readFileSync(join(root, source, 'index.json'), 'utf8')) as { name: string; examples: WebhookExample['payload'][] }[];
    const examples = events.find((e) => e.name === 'workflow_job')?.examples ?? [];
    examples.forEach((payload, index) => out.push({ source, index, payload }));
  }
  return out;
}
