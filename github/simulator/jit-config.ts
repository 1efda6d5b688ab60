/**
 * The simulator's encoded JIT config. Like GitHub's, it is base64 of a JSON map
 * of runner settings files (`.runner`, `.credentials`, ...), each base64 again.
 * `ServerUrl` points at the simulator, so an agent needs nothing else to find it;
 * the credentials hold a per-runner secret so configs cannot be made up.
 */

export interface SimJitSettings {
  runnerId: number;
  runnerName: string;
  secret: string;
  serverUrl: string;
  workFolder: string;
}

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64');
const unb64 = (value: string): unknown => JSON.parse(Buffer.from(value, 'base64').toString('utf8'));

export function encodeJitConfig(s: SimJitSettings): string {
  return b64({
    '.runner': b64({
      AgentId: String(s.runnerId),
      AgentName: s.runnerName,
      PoolId: '1',
      PoolName: 'Default',
      ServerUrl: s.serverUrl,
      GitHubUrl: s.serverUrl,
      WorkFolder: s.workFolder,
      Ephemeral: 'true',
    }),
    '.credentials': b64({ Scheme: 'OAuth', Data: { ClientId: s.secret, AuthorizationUrl: `${s.serverUrl}/_sim/oauth2/token` } }),
    '.credentials_rsaparams': b64({ simulated: true }),
  });
}

/** Returns undefined for anything that is not a config this simulator could have minted. */
export function decodeJitConfig(encoded: string): SimJitSettings | undefined {
  try {
    const files = unb64(encoded) as Record<string, string>;
    const runner = unb64(files['.runner'] ?? '') as Record<string, string>;
    const credentials = unb64(files['.credentials'] ?? '') as { Data?: { ClientId?: string } };
    const runnerId = Number(runner.AgentId);
    const secret = credentials.Data?.ClientId;
    if (!Number.isInteger(runnerId) || !secret || !runner.ServerUrl || !runner.AgentName) return undefined;
    return { runnerId, runnerName: runner.AgentName, secret, serverUrl: runner.ServerUrl, workFolder: runner.WorkFolder ?? '_work' };
  } catch {
    return undefined;
  }
}
