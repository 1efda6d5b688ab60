import { providerOperations } from '../observability/metrics';
import { ProviderDuplicateError, ProviderNotFoundError, type ProviderPort } from './port';

function outcomeOf(err: unknown): string {
  if (err instanceof ProviderNotFoundError) return 'not_found';
  if (err instanceof ProviderDuplicateError) return 'duplicate';
  if (err instanceof Error && err.name === 'AbortError') return 'aborted';
  return 'error';
}

async function timed<T>(provider: string, operation: string, run: () => Promise<T>): Promise<T> {
  const stop = providerOperations.startTimer({ provider, operation });
  try {
    const result = await run();
    stop({ outcome: 'ok' });
    return result;
  } catch (err) {
    stop({ outcome: outcomeOf(err) });
    throw err;
  }
}

/**
 * The same provider, with every operation timed into `runnerflow_provider_operation_seconds`.
 * Extra methods of the provider (e.g. an external provider's GetVersion) stay reachable.
 */
export function instrumentProvider<P extends ProviderPort>(port: P): P {
  const name = port.name;
  return new Proxy(port, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'close' || typeof prop !== 'string') return value;
      const fn = value as (...args: unknown[]) => unknown;
      // Every provider method is asynchronous, so wrapping keeps its shape.
      return (...args: unknown[]) => timed(name, prop, async () => fn.apply(target, args));
    },
  });
}
