/**
 * Preloaded into the workflow sandbox, before the SDK freezes its globals, unless the
 * worker is configured with `temporal.workflowStackTraces` (worker/workflow-bundle.ts).
 * Not a workflow: it only sets how many frames an error made in the sandbox captures.
 *
 * Why none: for the Temporal UI's stack trace query, the SDK's promise hook captures
 * and formats a stack trace for every promise workflow code creates. That was a third
 * of the worker's workflow-thread CPU per runner lifecycle, and about half of the time
 * a pool's history takes to replay after the worker evicts it (bench/README.md,
 * "Stack traces in the workflow sandbox"). With no frames to capture, V8 skips the
 * capture and the hook returns early; a limit of a few frames saves little, since most
 * of the cost is in capturing at all.
 *
 * What it costs: errors made in workflow code keep their message but have no frames,
 * and the stack trace query answers with nothing. A workflow's failure is deterministic
 * given its history, so replaying that history with stack traces on gives its frames.
 */
Error.stackTraceLimit = 0;

export {};
