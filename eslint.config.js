import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['node_modules/**', '.temporal/**', '.cache/**', '.runnerflow/**', 'dist/**', 'bin/**', 'eslint.config.js'] },
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Workflow code is replayed deterministically inside Temporal's sandbox:
    // Node built-ins (fs, crypto, timers, ...) are neither available nor deterministic there.
    files: ['workflows/**/*.ts', 'domain/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: nodeBuiltins.map((name) => ({ name, message: 'No Node built-ins in workflow code.' })) }],
    },
  },
  {
    // The worker evaluates the workflow modules again for every workflow it creates (every runner,
    // and every runner replayed after eviction): zod and the schemas built with it cost a runner a
    // sixth of its workflow thread time and most of its memory (bench/README.md). Only the pool's
    // updatePool check loads them, when the pool starts.
    files: ['workflows/**/*.ts'],
    ignores: ['workflows/pool-settings-input.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'zod', allowTypeImports: true, message: 'zod is loaded only by workflows/pool-settings-input.ts.' }],
          patterns: [
            {
              group: ['**/domain/pool', '**/domain/duration', '**/domain/timings'],
              allowTypeImports: true,
              message: 'This module builds zod schemas: import its types only; the updatePool check loads it (workflows/pool-settings-input.ts).',
            },
          ],
        },
      ],
    },
  },
);
