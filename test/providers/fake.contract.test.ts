import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeProvider } from '../../providers/fake';
import { runProviderContract } from './contract';

runProviderContract('fake', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'runnerflow-fake-contract-'));
  return { provider: new FakeProvider({ name: 'fake', stateDir }), cleanup: () => rmSync(stateDir, { recursive: true, force: true }) };
});
