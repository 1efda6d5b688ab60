/**
 * A bench-shaped script for the interrupt tests: it registers two clean-ups the way a bench
 * does (one it forgets again, as a bench that already released something), says `ready`, and
 * waits (or, with FAIL_UNAWAITED, fails in work nothing awaits). Each clean-up that runs appends its name to the file named by MARKER.
 */
import { appendFileSync } from 'node:fs';
import { cleanUpOnInterrupt, exitAfter, releasedOnInterrupt, runBench, sleep } from '../../../bench/common';

const marker = process.env.MARKER!;

runBench('interruptible', async () => {
  const giveUpMs = Number(process.env.GIVE_UP_MS ?? 0);
  if (giveUpMs > 0) exitAfter(giveUpMs, 'interruptible');
  // As benches register a dev server and a stack: released by the bench when it ends normally.
  releasedOnInterrupt(() => appendFileSync(marker, 'server\n'));
  // Asynchronous, as a stack's stop is: the exit waits for it.
  releasedOnInterrupt(async () => {
    await sleep(200);
    appendFileSync(marker, 'stack\n');
  });
  const forget = cleanUpOnInterrupt(() => appendFileSync(marker, 'released\n'));
  forget();
  console.log('ready');
  // Work nothing awaits, failing: as a restart a campaign started and did not wait for.
  if (process.env.FAIL_UNAWAITED) void Promise.reject(new Error('a restart failed'));
  await sleep(60_000);
});
