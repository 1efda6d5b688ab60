/**
 * The same server through a client of its own that counts the queries of one name it sends:
 * what a check that should spare a pool its queries can be held to.
 */
import { Client } from '@temporalio/client';

export function queryCountingClient(client: Client, queryName: string): { client: Client; asked: () => number } {
  const counting = new Client({ connection: client.connection, namespace: 'default' });
  const getHandle = counting.workflow.getHandle.bind(counting.workflow);
  let asked = 0;
  counting.workflow.getHandle = ((workflowId: string, runId?: string) => {
    const handle = getHandle(workflowId, runId);
    const query = handle.query.bind(handle);
    handle.query = ((def: { name: string } | string, ...args: unknown[]) => {
      if ((typeof def === 'string' ? def : def.name) === queryName) asked += 1;
      return query(def as never, ...(args as []));
    }) as typeof handle.query;
    return handle;
  }) as typeof counting.workflow.getHandle;
  return { client: counting, asked: () => asked };
}
