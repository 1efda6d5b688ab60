/**
 * Wire shapes of GitHub's Actions service for runner scale sets, with the JSON
 * keys GitHub's own Go client uses (actions/scaleset `types.go`, see
 * docs/scale-sets.md for the revision). The simulator answers with these
 * shapes and test/scale-set/wire-keys.test.ts holds both to the recorded list.
 */

export interface ScaleSetLabel {
  type: string;
  name: string;
}

export interface RunnerGroup {
  id: number;
  name: string;
  size?: number;
  isDefaultGroup: boolean;
}

export interface RunnerScaleSetStatistic {
  totalAvailableJobs: number;
  totalAcquiredJobs: number;
  totalAssignedJobs: number;
  totalRunningJobs: number;
  totalRegisteredRunners: number;
  totalBusyRunners: number;
  totalIdleRunners: number;
}

export interface RunnerSetting {
  ephemeral?: boolean;
  isElastic?: boolean;
  disableUpdate?: boolean;
}

export interface RunnerScaleSet {
  id: number;
  name: string;
  runnerGroupId: number;
  runnerGroupName?: string;
  labels?: ScaleSetLabel[];
  /** Capitalised on the wire, as GitHub's client sends it. */
  RunnerSetting?: RunnerSetting;
  createdOn?: string;
  runnerJitConfigUrl?: string;
  statistics?: RunnerScaleSetStatistic | null;
}

export interface RunnerScaleSetSession {
  sessionId: string;
  ownerName: string;
  runnerScaleSet?: RunnerScaleSet;
  messageQueueUrl: string;
  messageQueueAccessToken: string;
  statistics?: RunnerScaleSetStatistic | null;
}

/** The queue's envelope; `body` is a JSON string holding an array of job messages. */
export interface RunnerScaleSetMessage {
  messageId: number;
  messageType: string;
  body: string;
  statistics: RunnerScaleSetStatistic | null;
}

export const JOB_MESSAGES_TYPE = 'RunnerScaleSetJobMessages';

export interface JobMessageBase {
  messageType: 'JobAvailable' | 'JobAssigned' | 'JobStarted' | 'JobCompleted';
  runnerRequestId: number;
  repositoryName: string;
  ownerName: string;
  jobId: string;
  jobWorkflowRef: string;
  jobDisplayName: string;
  workflowRunId: number;
  eventName: string;
  requestLabels: string[];
  queueTime: string;
  scaleSetAssignTime: string;
  runnerAssignTime: string;
  finishTime: string;
}

export interface JobAvailable extends JobMessageBase {
  messageType: 'JobAvailable';
  acquireJobUrl: string;
}
export interface JobAssigned extends JobMessageBase {
  messageType: 'JobAssigned';
}
export interface JobStarted extends JobMessageBase {
  messageType: 'JobStarted';
  runnerId: number;
  runnerName: string;
}
export interface JobCompleted extends JobMessageBase {
  messageType: 'JobCompleted';
  result: string;
  runnerId: number;
  runnerName: string;
}
export type JobMessage = JobAvailable | JobAssigned | JobStarted | JobCompleted;

export interface RunnerReference {
  id: number;
  name: string;
  runnerScaleSetId: number;
}

export interface RunnerScaleSetJitRunnerConfig {
  runner: RunnerReference;
  encodedJITConfig: string;
}

/** A job waiting for a scale set, as the service lists them (`acquirablejobs`). */
export interface AcquirableJob {
  acquireJobUrl: string;
  messageType: string;
  runnerRequestId: number;
  repositoryName: string;
  ownerName: string;
  jobWorkflowRef: string;
  eventName: string;
  requestLabels: string[];
}

/** `{count, value}` lists: scale sets, runner groups, runners, acquired job ids, acquirable jobs. */
export interface ListOf<T> {
  count: number;
  value: T[];
}

/** The registration exchange's answer. */
export interface ActionsServiceAdminConnection {
  url: string;
  token: string;
}

/**
 * JSON keys of each shape in actions/scaleset `types.go` at commit
 * 39ffa2e5604b32df4864a26c7223377b35483011 (embedded structs flattened),
 * recorded by hand from that file. The simulator's answers must use only these.
 */
export const GO_CLIENT_REVISION = 'actions/scaleset@39ffa2e5604b32df4864a26c7223377b35483011';
const JOB_MESSAGE_BASE_KEYS = [
  'messageType', 'runnerRequestId', 'repositoryName', 'ownerName', 'jobId', 'jobWorkflowRef', 'jobDisplayName',
  'workflowRunId', 'eventName', 'requestLabels', 'queueTime', 'scaleSetAssignTime', 'runnerAssignTime', 'finishTime',
] as const;
export const GO_CLIENT_JSON_KEYS = {
  Int64List: ['count', 'value'],
  JobAvailable: ['acquireJobUrl', ...JOB_MESSAGE_BASE_KEYS],
  JobAssigned: [...JOB_MESSAGE_BASE_KEYS],
  JobStarted: ['runnerId', 'runnerName', ...JOB_MESSAGE_BASE_KEYS],
  JobCompleted: ['result', 'runnerId', 'runnerName', ...JOB_MESSAGE_BASE_KEYS],
  Label: ['type', 'name'],
  RunnerGroup: ['id', 'name', 'size', 'isDefaultGroup'],
  RunnerGroupList: ['count', 'value'],
  RunnerScaleSet: ['id', 'name', 'runnerGroupId', 'runnerGroupName', 'labels', 'RunnerSetting', 'createdOn', 'runnerJitConfigUrl', 'statistics'],
  RunnerScaleSetJitRunnerSetting: ['name', 'workFolder'],
  RunnerScaleSetMessage: ['messageId', 'messageType', 'body', 'statistics'],
  runnerScaleSetsResponse: ['count', 'value'],
  RunnerScaleSetSession: ['sessionId', 'ownerName', 'runnerScaleSet', 'messageQueueUrl', 'messageQueueAccessToken', 'statistics'],
  RunnerScaleSetStatistic: [
    'totalAvailableJobs', 'totalAcquiredJobs', 'totalAssignedJobs', 'totalRunningJobs',
    'totalRegisteredRunners', 'totalBusyRunners', 'totalIdleRunners',
  ],
  RunnerSetting: ['ephemeral', 'isElastic', 'disableUpdate'],
  RunnerReferenceList: ['count', 'value'],
  RunnerReference: ['id', 'name', 'runnerScaleSetId'],
  RunnerScaleSetJitRunnerConfig: ['runner', 'encodedJITConfig'],
  /**
   * The acquirable-jobs list is not in that revision (actions/scaleset dropped it with job
   * acquisition, and restored only the acquisition); these are the keys of actions-runner-controller's
   * `github/actions/types.go`, whose listener reads the list when it opens a session.
   */
  AcquirableJobList: ['count', 'value'],
  AcquirableJob: ['acquireJobUrl', 'messageType', 'runnerRequestId', 'repositoryName', 'ownerName', 'jobWorkflowRef', 'eventName', 'requestLabels'],
  /** client.go: actionsServiceAdminConnection. */
  actionsServiceAdminConnection: ['url', 'token'],
} as const satisfies Record<string, readonly string[]>;
