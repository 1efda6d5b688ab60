import { parseConfig } from '../../config/load';
import { createGitHubRegistry, type GitHubRegistry } from '../../github/registry';

/** The project's GitHub registry pointed at a simulator, as a configured installation would build it. */
export function simulatorRegistry(simUrl: string): GitHubRegistry {
  const config = parseConfig({ github: { credentials: [{ name: 'default', apiUrl: simUrl, auth: { type: 'pat', token: { env: 'SIM_TOKEN' } } }] } });
  return createGitHubRegistry(config, { SIM_TOKEN: 'ghp_simulated' });
}
