/**
 * The instance activities' dependencies as tests wire them: no API listens at the callback
 * and metadata addresses, and an instance token is a plain string naming its instance.
 * Free of vitest, so a worker in a child process uses it too.
 */
import type { InstanceActivityDeps } from '../../activities/instance-activities';
import type { ProviderPort } from '../../providers/port';

export function testInstanceDeps(providers: ReadonlyMap<string, ProviderPort>, github: InstanceActivityDeps['github']): InstanceActivityDeps {
  return {
    controllerId: 'test-controller',
    providers,
    github,
    callbackUrl: 'http://127.0.0.1:9/api/v1/callbacks/status',
    metadataUrl: 'http://127.0.0.1:9/api/v1/metadata',
    mintInstanceToken: async (claims) => `token-for-${claims.instance}`,
  };
}
