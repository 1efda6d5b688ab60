/**
 * Routes of the simulated Actions service (runner scale sets), under
 * `/_actions` on the simulator, plus the registration exchange on the REST API.
 */
export type ActionsOperationName =
  | 'runner-registration'
  | 'get-runner-group'
  | 'list-scale-sets'
  | 'create-scale-set'
  | 'get-scale-set'
  | 'update-scale-set'
  | 'delete-scale-set'
  | 'create-session'
  | 'refresh-session'
  | 'delete-session'
  | 'get-message'
  | 'delete-message'
  | 'acquire-jobs'
  | 'get-acquirable-jobs'
  | 'generate-scale-set-jitconfig'
  | 'get-agents'
  | 'remove-agent';

interface ActionsRoute {
  name: ActionsOperationName;
  method: string;
  pattern: RegExp;
  /** Which token authorises it: the admin JWT, the session's queue token, or a registration token. */
  auth: 'admin' | 'queue' | 'registration';
}

const SS = '/_actions/_apis/runtime/runnerscalesets';
export const ACTIONS_ROUTES: ActionsRoute[] = [
  { name: 'runner-registration', method: 'POST', pattern: /^\/actions\/runner-registration$/, auth: 'registration' },
  { name: 'get-runner-group', method: 'GET', pattern: /^\/_actions\/_apis\/runtime\/runnergroups$/, auth: 'admin' },
  { name: 'list-scale-sets', method: 'GET', pattern: new RegExp(`^${SS}$`), auth: 'admin' },
  { name: 'create-scale-set', method: 'POST', pattern: new RegExp(`^${SS}$`), auth: 'admin' },
  { name: 'get-scale-set', method: 'GET', pattern: new RegExp(`^${SS}/(\\d+)$`), auth: 'admin' },
  { name: 'update-scale-set', method: 'PATCH', pattern: new RegExp(`^${SS}/(\\d+)$`), auth: 'admin' },
  { name: 'delete-scale-set', method: 'DELETE', pattern: new RegExp(`^${SS}/(\\d+)$`), auth: 'admin' },
  { name: 'create-session', method: 'POST', pattern: new RegExp(`^${SS}/(\\d+)/sessions$`), auth: 'admin' },
  { name: 'refresh-session', method: 'PATCH', pattern: new RegExp(`^${SS}/(\\d+)/sessions/([\\w-]+)$`), auth: 'admin' },
  { name: 'delete-session', method: 'DELETE', pattern: new RegExp(`^${SS}/(\\d+)/sessions/([\\w-]+)$`), auth: 'admin' },
  { name: 'acquire-jobs', method: 'POST', pattern: new RegExp(`^${SS}/(\\d+)/acquirejobs$`), auth: 'queue' },
  { name: 'get-acquirable-jobs', method: 'GET', pattern: new RegExp(`^${SS}/(\\d+)/acquirablejobs$`), auth: 'admin' },
  { name: 'generate-scale-set-jitconfig', method: 'POST', pattern: new RegExp(`^${SS}/(\\d+)/generatejitconfig$`), auth: 'admin' },
  { name: 'get-agents', method: 'GET', pattern: /^\/_actions\/_apis\/distributedtask\/pools\/0\/agents$/, auth: 'admin' },
  { name: 'remove-agent', method: 'DELETE', pattern: /^\/_actions\/_apis\/distributedtask\/pools\/0\/agents\/(\d+)$/, auth: 'admin' },
  { name: 'get-message', method: 'GET', pattern: /^\/_actions\/_queues\/(\d+)\/sessions\/([\w-]+)\/messages$/, auth: 'queue' },
  { name: 'delete-message', method: 'DELETE', pattern: /^\/_actions\/_queues\/(\d+)\/sessions\/([\w-]+)\/messages\/(\d+)$/, auth: 'queue' },
];

export function isActionsPath(path: string): boolean {
  return path === '/actions/runner-registration' || path.startsWith('/_actions/');
}

export function matchActionsRoute(method: string, path: string): { route: ActionsRoute; args: string[] } | undefined {
  for (const route of ACTIONS_ROUTES) {
    const m = route.pattern.exec(path);
    if (m && route.method === method) return { route, args: m.slice(1) };
  }
  return undefined;
}
