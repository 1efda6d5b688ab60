/**
 * A GARM external provider executable behind the provider port: one exec per
 * operation, GARM's environment variables and exit codes.
 */
import type { ExternalProviderConfig } from '../../config/schema';
import {
  ProviderDuplicateError,
  ProviderFaultError,
  ProviderNotFoundError,
  type BootstrapInstance,
  type ProviderCallContext,
  type ProviderInstance,
  type ProviderPort,
} from '../port';
import { bootstrapSecrets, redact, truncate } from '../secrets';
import { commandEnvironment, passthroughEnvironment, proxyConfigFrom } from './environment';
import {
  EXIT_DUPLICATE,
  EXIT_NOT_FOUND,
  InvalidProviderOutput,
  parseInstanceList,
  parseJson,
  parseProviderInstance,
  toGarmBootstrap,
  type GarmCommand,
  type GarmProxyConfig,
} from './protocol';
import { runExecutable, type ExecutableResult } from './run-executable';

export type ExternalProviderOptions = Pick<ExternalProviderConfig, 'name' | 'executable' | 'configFile' | 'interfaceVersion' | 'environmentPrefixes' | 'timeout'>;

interface ExecOptions {
  instanceId?: string;
  poolId?: string;
  extraSpecs?: Record<string, unknown>;
  stdin?: string;
  secrets?: string[];
}

type Exited = Extract<ExecutableResult, { kind: 'exited' }>;

/**
 * Whether calls other than create hand the executable the pool's extra specs: GARM's
 * interface v0.1.1 sends them with every per-pool command, and an executable that picks
 * its region, project or account from them lists, gets and deletes there. Callers look
 * the extra specs up only for such a provider.
 */
export function takesPoolExtraSpecs(port: ProviderPort): boolean {
  return port instanceof ExternalProvider && port.interfaceVersion === 'v0.1.1';
}

export class ExternalProvider implements ProviderPort {
  readonly name: string;
  /** garm-provider-common refuses ListInstances without GARM_POOL_ID: GARM itself lists pool by pool. */
  readonly listsPerPool = true;
  readonly interfaceVersion: ExternalProviderOptions['interfaceVersion'];
  private readonly passthrough: Record<string, string>;
  private readonly proxy: GarmProxyConfig;

  constructor(
    private readonly config: ExternalProviderOptions,
    hostEnv: NodeJS.ProcessEnv = process.env,
  ) {
    this.name = config.name;
    this.interfaceVersion = config.interfaceVersion;
    this.passthrough = passthroughEnvironment(hostEnv, config.environmentPrefixes);
    this.proxy = proxyConfigFrom(hostEnv);
  }

  async createInstance(bootstrap: BootstrapInstance, ctx: ProviderCallContext): Promise<ProviderInstance> {
    const secrets = bootstrapSecrets(bootstrap);
    const result = await this.exec('CreateInstance', ctx, {
      poolId: bootstrap.poolId || ctx.poolId,
      extraSpecs: ctx.extraSpecs ?? bootstrap.extraSpecs,
      stdin: JSON.stringify(toGarmBootstrap(bootstrap, this.proxy)),
      secrets,
    });
    if (result.code === EXIT_DUPLICATE) {
      // Creating twice must not fail: the machine the first call made is the answer.
      try {
        return await this.getInstance(bootstrap.name, { ...ctx, poolId: bootstrap.poolId || ctx.poolId });
      } catch (err) {
        if (err instanceof ProviderNotFoundError) throw new ProviderDuplicateError(this.name, bootstrap.name, this.stderrOf(result, secrets));
        throw err;
      }
    }
    this.expectSuccess('CreateInstance', result, secrets);
    return this.parse('CreateInstance', result, secrets, (out) => parseProviderInstance(parseJson(out)));
  }

  async deleteInstance(instanceId: string, ctx: ProviderCallContext): Promise<void> {
    const result = await this.exec('DeleteInstance', ctx, { instanceId });
    if (result.code === EXIT_NOT_FOUND) return;
    this.expectSuccess('DeleteInstance', result);
  }

  async getInstance(instanceId: string, ctx: ProviderCallContext): Promise<ProviderInstance> {
    const result = await this.exec('GetInstance', ctx, { instanceId });
    if (result.code === EXIT_NOT_FOUND) throw new ProviderNotFoundError(this.name, instanceId, this.stderrOf(result));
    this.expectSuccess('GetInstance', result);
    return this.parse('GetInstance', result, [], (out) => parseProviderInstance(parseJson(out)));
  }

  async listInstances(ctx: ProviderCallContext): Promise<ProviderInstance[]> {
    const result = await this.exec('ListInstances', ctx, {});
    this.expectSuccess('ListInstances', result);
    const instances = this.parse('ListInstances', result, [], parseInstanceList);
    // GARM's instance JSON may carry pool_id; when it does, trust it over a sloppy filter.
    return ctx.poolId ? instances.filter((i) => i.poolId === undefined || i.poolId === ctx.poolId) : instances;
  }

  async startInstance(instanceId: string, ctx: ProviderCallContext): Promise<void> {
    await this.instanceCommand('StartInstance', instanceId, ctx);
  }

  async stopInstance(instanceId: string, ctx: ProviderCallContext): Promise<void> {
    await this.instanceCommand('StopInstance', instanceId, ctx);
  }

  /** Removes every machine tagged with this controller (GARM's RemoveAllInstances). */
  async removeAllInstances(ctx: ProviderCallContext): Promise<void> {
    this.expectSuccess('RemoveAllInstances', await this.exec('RemoveAllInstances', ctx, {}));
  }

  /** The executable's own version string. */
  async getVersion(ctx: ProviderCallContext): Promise<string> {
    const result = await this.exec('GetVersion', ctx, {});
    this.expectSuccess('GetVersion', result);
    return result.stdout.trim();
  }

  async getSupportedInterfaceVersions(ctx: ProviderCallContext): Promise<string[]> {
    const result = await this.v011Exec('GetSupportedInterfaceVersions', ctx, {});
    return this.parse('GetSupportedInterfaceVersions', result, [], (out) => {
      const value = parseJson(out);
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new InvalidProviderOutput('expected a JSON array of version strings');
      return value;
    });
  }

  /** Asks the executable whether a pool's image, flavor and extra specs are usable; throws ProviderFaultError when not. */
  async validatePoolInfo(pool: { image: string; flavor: string; extraSpecs?: Record<string, unknown> }, ctx: ProviderCallContext): Promise<void> {
    // garm-provider-common reads image and flavor from a bootstrap on stdin.
    await this.v011Exec('ValidatePoolInfo', ctx, { extraSpecs: pool.extraSpecs ?? ctx.extraSpecs, stdin: JSON.stringify({ image: pool.image, flavor: pool.flavor }) });
  }

  /** JSON schema (as text) of the executable's config file; empty when it has none. */
  async getConfigJSONSchema(ctx: ProviderCallContext): Promise<string> {
    return (await this.v011Exec('GetConfigJSONSchema', ctx, {})).stdout.trim();
  }

  /** JSON schema (as text) of the pool extra specs the executable understands; empty when it has none. */
  async getExtraSpecsJSONSchema(ctx: ProviderCallContext): Promise<string> {
    return (await this.v011Exec('GetExtraSpecsJSONSchema', ctx, {})).stdout.trim();
  }

  private async instanceCommand(command: GarmCommand, instanceId: string, ctx: ProviderCallContext): Promise<void> {
    const result = await this.exec(command, ctx, { instanceId });
    if (result.code === EXIT_NOT_FOUND) throw new ProviderNotFoundError(this.name, instanceId, this.stderrOf(result));
    this.expectSuccess(command, result);
  }

  private async v011Exec(command: GarmCommand, ctx: ProviderCallContext, options: ExecOptions): Promise<Exited> {
    if (this.config.interfaceVersion !== 'v0.1.1') {
      throw new ProviderFaultError(this.name, `${command} needs interface version v0.1.1; provider ${this.name} is configured for ${this.config.interfaceVersion}`, undefined, false);
    }
    const result = await this.exec(command, ctx, options);
    this.expectSuccess(command, result);
    return result;
  }

  /** One exec; every outcome but an exit code becomes a ProviderFaultError (or the abort reason). */
  private async exec(command: GarmCommand, ctx: ProviderCallContext, options: ExecOptions): Promise<Exited> {
    const env = commandEnvironment(
      {
        command,
        interfaceVersion: this.config.interfaceVersion,
        controllerId: ctx.controllerId,
        configFile: this.config.configFile,
        poolId: options.poolId ?? ctx.poolId,
        instanceId: options.instanceId,
        extraSpecs: options.extraSpecs ?? ctx.extraSpecs,
      },
      this.passthrough,
    );
    // As in GARM, whose exec timeout is unset by default: only a configured timeout caps every call,
    // since a create cut off half-way leaves whatever the executable had made by then.
    const bounds = [this.config.timeout, ctx.timeoutMs].filter((b): b is number => b !== undefined);
    const timeoutMs = bounds.length > 0 ? Math.min(...bounds) : undefined;
    const result = await runExecutable({ executable: this.config.executable, env, stdin: options.stdin, ...(timeoutMs !== undefined ? { timeoutMs } : {}), signal: ctx.signal });
    const secrets = options.secrets ?? [];
    switch (result.kind) {
      case 'exited':
        return result;
      case 'timed-out':
        throw new ProviderFaultError(this.name, `${command} timed out after ${timeoutMs} ms; the executable was killed`, this.clean(result.stderr, secrets));
      case 'signalled':
        throw new ProviderFaultError(this.name, `${command} was killed by ${result.signal}`, this.clean(result.stderr, secrets));
      case 'spawn-failed':
        throw new ProviderFaultError(this.name, `cannot run provider executable ${this.config.executable}: ${result.error}`, undefined, false);
    }
  }

  private expectSuccess(command: GarmCommand, result: Exited, secrets: string[] = []): void {
    if (result.code === 0) return;
    const stderr = this.stderrOf(result, secrets);
    const what = result.code === EXIT_NOT_FOUND ? 'not found' : result.code === EXIT_DUPLICATE ? 'duplicate' : `exit code ${result.code}`;
    throw new ProviderFaultError(this.name, `${command} failed (${what})${stderr ? `: ${stderr}` : ''}`, stderr);
  }

  private parse<T>(command: GarmCommand, result: Exited, secrets: string[], parse: (stdout: string) => T): T {
    try {
      return parse(result.stdout);
    } catch (err) {
      if (!(err instanceof InvalidProviderOutput)) throw err;
      throw new ProviderFaultError(this.name, `${command} returned unusable output: ${err.message}`, this.clean(result.stdout, secrets));
    }
  }

  private stderrOf(result: Exited, secrets: string[] = []): string {
    return this.clean(result.stderr, secrets);
  }

  private clean(text: string, secrets: string[]): string {
    return truncate(redact(text, secrets));
  }
}
