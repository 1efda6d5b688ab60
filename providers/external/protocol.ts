/**
 * GARM's external provider wire format (garm-provider-common `params` and
 * `execution/common`): what goes to the executable and what comes back.
 */
import type { BootstrapInstance, ProviderInstance, ProviderInstanceStatus } from '../port';

export type InterfaceVersion = 'v0.1.0' | 'v0.1.1';

export type GarmCommand =
  | 'CreateInstance'
  | 'DeleteInstance'
  | 'GetInstance'
  | 'ListInstances'
  | 'StartInstance'
  | 'StopInstance'
  | 'RemoveAllInstances'
  | 'GetVersion'
  // v0.1.1 only
  | 'GetSupportedInterfaceVersions'
  | 'ValidatePoolInfo'
  | 'GetConfigJSONSchema'
  | 'GetExtraSpecsJSONSchema';

export const EXIT_NOT_FOUND = 30;
export const EXIT_DUPLICATE = 31;

/** Statuses GARM accepts from a provider; the others are GARM's own bookkeeping. */
const PROVIDER_STATUSES: readonly ProviderInstanceStatus[] = ['running', 'stopped', 'error', 'unknown'];

/**
 * The extra stdin key for providers that know runnerflow. GARM providers ignore it;
 * a runnerflow-aware provider reads the runner credential from here instead of
 * fetching it from the metadata URL:
 *
 *   "runnerflow": { "jit_config": "<encoded JIT config>", "registration_token": "<token>" }
 *
 * Both values are secrets. A registration token is sent only when there is no metadata
 * URL to fetch it from: it is good for the pool's whole scope for an hour, and an
 * executable that writes its stdin into the machine's cloud-init would hand it to every
 * job, which can read cloud-init back. The metadata service hands one out only while the
 * runner installs (GARM's own templates fetch it the same way).
 */
export const RUNNERFLOW_STDIN_KEY = 'runnerflow';

export interface GarmProxyConfig {
  http_proxy?: string;
  https_proxy?: string;
  no_proxy?: string;
}

/** BootstrapInstance as garm-provider-common marshals it (note the mixed `-` and `_` keys). */
export interface GarmBootstrapInstance {
  name: string;
  tools: BootstrapInstance['tools'];
  repo_url: string;
  'callback-url': string;
  'metadata-url': string;
  'instance-token': string;
  'ssh-keys': string[];
  extra_specs: Record<string, unknown>;
  'github-runner-group': string;
  /** []byte in Go, so base64 on the wire; null when there is no bundle. */
  'ca-cert-bundle': string | null;
  arch: string;
  os_type: string;
  flavor: string;
  image: string;
  labels: string[];
  pool_id: string;
  user_data_options: { disable_updates_on_boot: boolean; extra_packages: string[]; enable_boot_debug: boolean };
  jit_config_enabled: boolean;
  proxy_config?: GarmProxyConfig;
  [RUNNERFLOW_STDIN_KEY]?: { jit_config?: string; registration_token?: string };
}

export function toGarmBootstrap(b: BootstrapInstance, proxy?: GarmProxyConfig): GarmBootstrapInstance {
  const registrationToken = b.metadataUrl ? undefined : b.registrationToken;
  const credential = b.jitConfig || registrationToken ? { jit_config: b.jitConfig, registration_token: registrationToken } : undefined;
  return {
    name: b.name,
    tools: b.tools,
    repo_url: b.repoUrl,
    'callback-url': b.callbackUrl,
    'metadata-url': b.metadataUrl,
    'instance-token': b.instanceToken,
    'ssh-keys': b.sshKeys,
    extra_specs: b.extraSpecs ?? {},
    'github-runner-group': b.githubRunnerGroup,
    'ca-cert-bundle': b.caCertBundle ? Buffer.from(b.caCertBundle).toString('base64') : null,
    arch: b.arch,
    os_type: b.osType,
    flavor: b.flavor,
    image: b.image,
    labels: b.labels,
    pool_id: b.poolId,
    user_data_options: {
      disable_updates_on_boot: b.userDataOptions?.disableUpdatesOnBoot ?? false,
      extra_packages: b.userDataOptions?.extraPackages ?? [],
      enable_boot_debug: b.userDataOptions?.enableBootDebug ?? false,
    },
    jit_config_enabled: b.jitConfigEnabled,
    ...(proxy && Object.keys(proxy).length > 0 ? { proxy_config: proxy } : {}),
    ...(credential ? { [RUNNERFLOW_STDIN_KEY]: credential } : {}),
  };
}

/** Why an executable's answer cannot be used; becomes a ProviderFaultError. */
export class InvalidProviderOutput extends Error {}

function decodeFault(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  // []byte in Go: base64. Hand-written providers often print plain text instead.
  const decoded = Buffer.from(value, 'base64');
  const plain = /^[A-Za-z0-9+/]+={0,2}$/.test(value) && decoded.toString('base64') === value ? decoded.toString('utf8') : value;
  return plain;
}

function toAddresses(value: unknown): ProviderInstance['addresses'] {
  if (!Array.isArray(value)) return [];
  return value
    .filter((a): a is { address: string; type?: string } => typeof a === 'object' && a !== null && typeof (a as { address?: unknown }).address === 'string')
    .map((a) => ({ address: a.address, type: a.type === 'public' ? 'public' : 'private' }));
}

/** Validates one ProviderInstance the way GARM does: provider_id, name and a provider status are required. */
export function parseProviderInstance(value: unknown): ProviderInstance {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidProviderOutput('expected a JSON object for the instance');
  const v = value as Record<string, unknown>;
  if (typeof v.provider_id !== 'string' || v.provider_id === '') throw new InvalidProviderOutput('instance is missing provider_id');
  if (typeof v.name !== 'string' || v.name === '') throw new InvalidProviderOutput(`instance ${v.provider_id} is missing name`);
  if (!PROVIDER_STATUSES.includes(v.status as ProviderInstanceStatus)) {
    throw new InvalidProviderOutput(`instance ${v.name} has invalid status ${JSON.stringify(v.status)} (expected one of ${PROVIDER_STATUSES.join(', ')})`);
  }
  const optionalString = (key: string) => (typeof v[key] === 'string' && v[key] !== '' ? (v[key] as string) : undefined);
  return {
    providerId: v.provider_id,
    name: v.name,
    osType: optionalString('os_type'),
    osName: optionalString('os_name'),
    osVersion: optionalString('os_version'),
    osArch: optionalString('os_arch'),
    addresses: toAddresses(v.addresses),
    status: v.status as ProviderInstanceStatus,
    providerFault: decodeFault(v.provider_fault),
    poolId: optionalString('pool_id'),
  };
}

export function parseJson(stdout: string): unknown {
  try {
    return JSON.parse(stdout);
  } catch {
    throw new InvalidProviderOutput(`output is not valid JSON (${stdout.trim() === '' ? 'empty' : `${stdout.trim().length} bytes`})`);
  }
}

export function parseInstanceList(stdout: string): ProviderInstance[] {
  // GARM's Go side decodes `null` into an empty list; so do we.
  const value = stdout.trim() === '' ? [] : parseJson(stdout);
  if (value === null) return [];
  if (!Array.isArray(value)) throw new InvalidProviderOutput('expected a JSON array of instances');
  return value.map(parseProviderInstance);
}
