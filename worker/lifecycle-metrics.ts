/** The worker's side of workflows/lifecycle-sink.ts: lifecycle facts into the Prometheus registry. */
import type { InjectedSinks } from '@temporalio/worker';
import { jobQueueSeconds, runnerBootstrapSeconds, runnerForcedDeletes, runnerLeaks, scaleSetsLeft } from '../observability/metrics';
import type { LifecycleSinks } from '../workflows/lifecycle-sink';

export const lifecycleSinks: InjectedSinks<LifecycleSinks> = {
  runnerLifecycle: {
    bootstrapped: {
      fn: (_info, { pool, provider, seconds }) => runnerBootstrapSeconds.observe({ pool, provider }, seconds),
      callDuringReplay: false,
    },
    jobStarted: {
      fn: (_info, { pool, queueSeconds }) => jobQueueSeconds.observe({ pool }, queueSeconds),
      callDuringReplay: false,
    },
    forceDeleted: {
      fn: (_info, { pool, provider, leaked }) => {
        runnerForcedDeletes.inc({ pool, provider });
        if (leaked) runnerLeaks.inc({ pool, provider });
      },
      callDuringReplay: false,
    },
  },
  scaleSetLifecycle: {
    left: {
      fn: (_info, { pool }) => scaleSetsLeft.inc({ pool }),
      callDuringReplay: false,
    },
  },
};
