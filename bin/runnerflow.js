#!/usr/bin/env node
// The CLI is TypeScript; tsx compiles it on the fly so no build step is needed.
import { register } from 'tsx/esm/api';

register();
await import('../cli/main.ts');
