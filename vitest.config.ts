import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    pool: 'forks',
    globalSetup: ['./test/support/global-setup.ts'],
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: more forks only make every Temporal test slower.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
