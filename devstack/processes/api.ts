/**
 * An API process of a multi-process dev stack (RUNNERFLOW_CONFIG, secrets in
 * the environment). Prints "ready <url>" once listening.
 */
import { Client } from '@temporalio/client';
import { silentLogger } from '../../observability/logger';
import { serveApi } from '../../api/serve';
import { loadConfig } from '../../config/load';
import { createGitHubRegistry } from '../../github/registry';
import { connectTemporal } from '../../api/temporal/connection';

const loaded = loadConfig();
const connection = await connectTemporal({ address: loaded.config.temporal.address });
const client = new Client({ connection, namespace: loaded.config.temporal.namespace });
const api = await serveApi({ loaded, client, github: createGitHubRegistry(loaded.config, loaded.env), logger: silentLogger });
process.once('SIGTERM', () => {
  void api.close().then(() => connection.close()).then(() => process.exit(0));
});
console.log(`ready ${api.url}`);
