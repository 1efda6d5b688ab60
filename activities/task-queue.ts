import { Context } from '@temporalio/activity';

/**
 * The task queue of the activity running now, which is its installation's: installations may
 * share a namespace, and each looks only at its own pools. Undefined when called outside an
 * activity, where every pool of the namespace is looked at.
 */
export function activityTaskQueue(): string | undefined {
  try {
    return Context.current().info.taskQueue;
  } catch {
    return undefined;
  }
}
