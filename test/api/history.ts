import type { Client } from '@temporalio/client';

export interface SignalSeen {
  name: string;
  input: unknown;
}

/** The signals a workflow run received, decoded, oldest first. */
export async function signalsOf(client: Client, workflowId: string, runId?: string): Promise<SignalSeen[]> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.workflowExecutionSignaledEventAttributes)
    .map((e) => {
      const attrs = e.workflowExecutionSignaledEventAttributes!;
      const payload = attrs.input?.payloads?.[0]?.data;
      return { name: attrs.signalName ?? '', input: payload ? (JSON.parse(Buffer.from(payload).toString()) as unknown) : undefined };
    });
}
