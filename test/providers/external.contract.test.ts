import { ExternalProvider } from '../../providers/external/provider';
import { runProviderContract } from './contract';
import { writeExternalScript } from './support/external-script';

for (const interfaceVersion of ['v0.1.0', 'v0.1.1'] as const) {
  runProviderContract(`external ${interfaceVersion}`, () => {
    const script = writeExternalScript();
    const provider = new ExternalProvider(
      { name: `ext-${interfaceVersion}`, executable: script.executable, configFile: script.configFile, interfaceVersion, environmentPrefixes: [], timeout: 20_000 },
      {},
    );
    return { provider, cleanup: () => script.remove() };
  });
}
