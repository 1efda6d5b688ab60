/**
 * The boot script an EC2 runner machine gets as user data. It is the only place
 * the runner credential goes: tags and API parameters are readable by anyone with
 * ec2:Describe*, user data only by those allowed ec2:DescribeInstanceAttribute.
 *
 * Every process on the machine can read user data back from the instance metadata
 * address, the runner's jobs included, and so can anyone allowed to describe the
 * instance. So no runner credential is written here when runnerflow's metadata
 * service is there to fetch it from: a registration token is good for the pool's whole
 * scope for an hour, and a JIT config holds the runner's own key, with which anyone
 * could pose as this runner and be handed its job. The script fetches either while
 * the runner installs, as GARM's install templates do, and the service hands out none
 * once the runner has registered.
 */
import type { BootstrapInstance, RunnerTool } from '../port';
import { JIT_FILES } from '../../domain/jit-files';

const TOOL_ARCH: Record<string, string> = { amd64: 'x64', arm64: 'arm64', arm: 'arm', i386: 'x86' };

/** Single-quotes a value for bash, whatever it contains. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

function pickTool(bootstrap: BootstrapInstance): RunnerTool | undefined {
  const arch = TOOL_ARCH[bootstrap.arch] ?? bootstrap.arch;
  return bootstrap.tools.find((t) => t.os === bootstrap.osType && t.architecture === arch);
}


/**
 * Fetches the runner's settings files out of its JIT config from the metadata service
 * into the current directory (`.runner`, `.credentials`, `.credentials_rsaparams`),
 * which `run.sh` reads instead of `--jitconfig`. Needs METADATA_URL and INSTANCE_TOKEN.
 */
export function jitFilesFetch(): string[] {
  return [
    `for file in ${JIT_FILES.join(' ')}; do`,
    '  curl -fsS --retry 5 --retry-delay 2 -H "Authorization: Bearer $INSTANCE_TOKEN" -o ".$file" "${METADATA_URL%/}/credentials/$file"',
    'done',
  ];
}

export function buildUserData(bootstrap: BootstrapInstance): string {
  const tool = pickTool(bootstrap);
  const jitFromMetadata = Boolean(bootstrap.jitConfig && bootstrap.metadataUrl);
  const lines = [
    '#!/bin/bash',
    'set -euo pipefail',
    `RUNNER_NAME=${shellQuote(bootstrap.name)}`,
    `CALLBACK_URL=${shellQuote(bootstrap.callbackUrl)}`,
    `INSTANCE_TOKEN=${shellQuote(bootstrap.instanceToken)}`,
    `JIT_CONFIG=${shellQuote(jitFromMetadata ? '' : (bootstrap.jitConfig ?? ''))}`,
    `JIT_FROM_METADATA=${jitFromMetadata ? '1' : '0'}`,
    `REGISTRATION_TOKEN=${shellQuote(bootstrap.metadataUrl ? '' : (bootstrap.registrationToken ?? ''))}`,
    `METADATA_URL=${shellQuote(bootstrap.metadataUrl)}`,
    `REPO_URL=${shellQuote(bootstrap.repoUrl)}`,
    `LABELS=${shellQuote(bootstrap.labels.join(','))}`,
    `RUNNER_GROUP=${shellQuote(bootstrap.githubRunnerGroup)}`,
    `TOOL_URL=${shellQuote(tool?.download_url ?? '')}`,
    `TOOL_SHA256=${shellQuote(tool?.sha256_checksum ?? '')}`,
    '',
    'status() {',
    '  [ -n "$CALLBACK_URL" ] || return 0',
    '  curl -fsS -X POST -H "Authorization: Bearer $INSTANCE_TOKEN" -H "Content-Type: application/json" \\',
    '    -d "{\\"status\\":\\"$1\\",\\"message\\":\\"$2\\"}" "$CALLBACK_URL" || true',
    '}',
    'trap \'status failed "runner bootstrap failed at line $LINENO"\' ERR',
    '',
    ...(bootstrap.caCertBundle
      ? [
          'cat > /usr/local/share/ca-certificates/runnerflow.crt <<\'RUNNERFLOW_CA\'',
          bootstrap.caCertBundle.trim(),
          'RUNNERFLOW_CA',
          'update-ca-certificates || true',
        ]
      : []),
    'id runner >/dev/null 2>&1 || useradd -m -s /bin/bash runner',
    'RUNNER_HOME=/home/runner/actions-runner',
    'mkdir -p "$RUNNER_HOME" && cd "$RUNNER_HOME"',
    'status installing "downloading the runner"',
    'if [ -n "$TOOL_URL" ]; then',
    '  curl -fsSL -o runner.tar.gz "$TOOL_URL"',
    '  [ -z "$TOOL_SHA256" ] || echo "$TOOL_SHA256  runner.tar.gz" | sha256sum -c -',
    '  tar xzf runner.tar.gz && rm runner.tar.gz',
    'fi',
    'chown -R runner:runner "$RUNNER_HOME"',
    'if [ "$JIT_FROM_METADATA" = 1 ]; then',
    '  status installing "fetching the runner\'s JIT files"',
    '  (',
    '    umask 077',
    ...jitFilesFetch().map((line) => `    ${line}`),
    '  )',
    `  chown runner:runner ${JIT_FILES.map((f) => `.${f}`).join(' ')}`,
    '  status installing "starting the runner"',
    '  exec sudo -u runner -- ./run.sh',
    'fi',
    'if [ -n "$JIT_CONFIG" ]; then',
    '  status installing "starting the runner with its JIT config"',
    '  exec sudo -u runner -- ./run.sh --jitconfig "$JIT_CONFIG"',
    'fi',
    'if [ -z "$REGISTRATION_TOKEN" ]; then',
    '  status installing "fetching a registration token"',
    '  REGISTRATION_TOKEN=$(curl -fsS -H "Authorization: Bearer $INSTANCE_TOKEN" "${METADATA_URL%/}/runner-registration-token/")',
    'fi',
    'sudo -u runner -- ./config.sh --unattended --ephemeral --url "$REPO_URL" --token "$REGISTRATION_TOKEN" \\',
    '  --name "$RUNNER_NAME" --labels "$LABELS" --runnergroup "$RUNNER_GROUP" --no-default-labels',
    'status installing "starting the runner"',
    'exec sudo -u runner -- ./run.sh',
    '',
  ];
  return lines.join('\n');
}
