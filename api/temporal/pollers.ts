/**
 * The workers polling a task queue, as the server has seen them lately (for some minutes after
 * their last poll): who, of which build, for which kind of task.
 *
 * A task queue is split into partitions, and each records only the polls that reached it, so
 * the pollers one partition lists (the default DescribeTaskQueue, the root's) can leave out a
 * worker whose polls all went elsewhere. The server's enhanced description gathers every
 * partition's; a server that no longer offers it is asked the default way.
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

const { TaskQueueKind, TaskQueueType, DescribeTaskQueueMode } = proto.temporal.api.enums.v1;
type PollerInfo = proto.temporal.api.taskqueue.v1.IPollerInfo;

export interface Poller {
  identity: string;
  buildId?: string;
  kind: 'workflow' | 'activity';
  lastPollMs: number;
}

const GRPC_INVALID_ARGUMENT = 3;
const GRPC_UNIMPLEMENTED = 12;

const poller = (p: PollerInfo, kind: Poller['kind']): Poller => ({
  identity: p.identity ?? '',
  kind,
  lastPollMs: Number(p.lastAccessTime?.seconds ?? 0) * 1_000 + Math.floor((p.lastAccessTime?.nanos ?? 0) / 1e6),
  ...(p.workerVersionCapabilities?.buildId ? { buildId: p.workerVersionCapabilities.buildId } : {}),
});

const KINDS = [
  ['workflow', TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW],
  ['activity', TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY],
] as const;

export async function taskQueuePollers(client: Client, taskQueue: string): Promise<Poller[]> {
  const namespace = client.options.namespace;
  const queue = { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL };
  try {
    const answer = await client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: queue,
      apiMode: DescribeTaskQueueMode.DESCRIBE_TASK_QUEUE_MODE_ENHANCED,
      versions: { unversioned: true, allActive: true },
      taskQueueTypes: KINDS.map(([, type]) => type),
      reportPollers: true,
    });
    const seen = new Map<string, Poller>();
    for (const version of Object.values(answer.versionsInfo ?? {})) {
      for (const [kind, type] of KINDS) {
        for (const p of version.typesInfo?.[type]?.pollers ?? []) seen.set(`${kind} ${p.identity ?? ''}`, poller(p, kind));
      }
    }
    return [...seen.values()];
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code !== GRPC_INVALID_ARGUMENT && code !== GRPC_UNIMPLEMENTED) throw err;
  }
  const answers = await Promise.all(KINDS.map(([, type]) => client.workflowService.describeTaskQueue({ namespace, taskQueue: queue, taskQueueType: type })));
  return answers.flatMap((a, i) => (a.pollers ?? []).map((p) => poller(p, KINDS[i]![0])));
}
