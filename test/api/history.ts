import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';

export interface SignalSeen {
  name: string;
  input: unknown;
}

/** The signals a workflow run received, decoded, oldest first. */
export async function signalsOf(client: Client, workflowId: string, runId?: string): Promise<SignalSeen[]> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return decodedSignals(history.events ?? []);
}

/** The signals of every run that continued from `runId` (not that run's own), each with its run id. */
export async function signalsOfLaterRuns(client: Client, workflowId: string, runId: string): Promise<(SignalSeen & { runId: string })[]> {
  const seen: (SignalSeen & { runId: string })[] = [];
  let next = runId;
  for (let first = true; ; first = false) {
    const events = (await client.workflow.getHandle(workflowId, next).fetchHistory()).events ?? [];
    if (!first) seen.push(...decodedSignals(events).map((s) => ({ ...s, runId: next })));
    const continued = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
    if (!continued) return seen;
    next = continued;
  }
}

function decodedSignals(events: temporal.api.history.v1.IHistoryEvent[]): SignalSeen[] {
  return events
    .filter((e) => e.workflowExecutionSignaledEventAttributes)
    .map((e) => {
      const attrs = e.workflowExecutionSignaledEventAttributes!;
      const payload = attrs.input?.payloads?.[0]?.data;
      return { name: attrs.signalName ?? '', input: payload ? (JSON.parse(Buffer.from(payload).toString()) as unknown) : undefined };
    });
}
