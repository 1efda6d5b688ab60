export { runnerInstance } from './runner-instance';
export { runnerPool } from './runner-pool';
export { unmatchedJobs } from './unmatched-jobs';
export { providerSweep } from './provider-sweep';
export { livenessCheck } from './liveness-check';
export { scaleSetListener } from './scale-set-listener';
export { machineCleanup } from './machine-cleanup';
export { jobRelay } from './job-relay';
