import type { GarmCommand, GarmProxyConfig, InterfaceVersion } from './protocol';

const PROXY_VARIABLES = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy'];

/** Commands that name one instance through GARM_INSTANCE_ID. */
const INSTANCE_COMMANDS: readonly GarmCommand[] = ['DeleteInstance', 'GetInstance', 'StartInstance', 'StopInstance'];
/** In v0.1.0 only these learn the pool. */
const V010_POOL_COMMANDS: readonly GarmCommand[] = ['CreateInstance', 'ListInstances'];

export interface CommandEnvironment {
  command: GarmCommand;
  interfaceVersion: InterfaceVersion;
  controllerId: string;
  configFile: string;
  poolId?: string;
  instanceId?: string;
  extraSpecs?: Record<string, unknown>;
}

/**
 * Host variables handed on: those the config allows by prefix (never GARM*, which
 * are ours to set) and the proxy settings.
 */
export function passthroughEnvironment(host: NodeJS.ProcessEnv, prefixes: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(host)) {
    if (value === undefined || name.toUpperCase().startsWith('GARM')) continue;
    if (PROXY_VARIABLES.includes(name) || prefixes.some((p) => name.startsWith(p))) out[name] = value;
  }
  return out;
}

export function proxyConfigFrom(host: NodeJS.ProcessEnv): GarmProxyConfig {
  const pick = (upper: string) => host[upper] || host[upper.toLowerCase()] || undefined;
  const proxy: GarmProxyConfig = { http_proxy: pick('HTTP_PROXY'), https_proxy: pick('HTTPS_PROXY'), no_proxy: pick('NO_PROXY') };
  return Object.fromEntries(Object.entries(proxy).filter(([, v]) => v !== undefined));
}

/** The complete environment of one exec: the GARM variables for this command over the passthrough. */
export function commandEnvironment(c: CommandEnvironment, passthrough: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {
    ...passthrough,
    GARM_COMMAND: c.command,
    GARM_CONTROLLER_ID: c.controllerId,
    GARM_PROVIDER_CONFIG_FILE: c.configFile,
    GARM_INTERFACE_VERSION: c.interfaceVersion,
  };
  const v011 = c.interfaceVersion === 'v0.1.1';
  if (v011 || V010_POOL_COMMANDS.includes(c.command)) {
    if (c.poolId !== undefined || v011) env.GARM_POOL_ID = c.poolId ?? '';
  }
  if (INSTANCE_COMMANDS.includes(c.command) && c.instanceId !== undefined) env.GARM_INSTANCE_ID = c.instanceId;
  // Always set in v0.1.1, as GARM does: executables decode it unconditionally. Callers pass the
  // pool's extra specs wherever they can know them; only then is it anything but `{}`.
  if (v011) env.GARM_POOL_EXTRASPECS = Buffer.from(JSON.stringify(c.extraSpecs ?? {})).toString('base64');
  return env;
}
