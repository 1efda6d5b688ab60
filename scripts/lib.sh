# Shared by the operator scripts: finds the temporal CLI and the cluster to talk to.
# TEMPORAL_ADDRESS (127.0.0.1:7233) and TEMPORAL_NAMESPACE (default) are honoured.
set -euo pipefail
SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TEMPORAL_ADDRESS="${TEMPORAL_ADDRESS:-127.0.0.1:7233}"
TEMPORAL_NAMESPACE="${TEMPORAL_NAMESPACE:-default}"
if [ -n "${TEMPORAL_CLI:-}" ]; then
  TEMPORAL="$TEMPORAL_CLI"
elif command -v temporal >/dev/null 2>&1; then
  TEMPORAL="$(command -v temporal)"
else
  TEMPORAL="$(bash "$SCRIPTS_DIR/../temporal-dev.sh" path)"
fi

t() { "$TEMPORAL" "$@" --address "$TEMPORAL_ADDRESS" --namespace "$TEMPORAL_NAMESPACE"; }

# JSON string escaping for a reason given on the command line.
json_string() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }

usage_if_missing() { if [ -z "${1:-}" ]; then echo "usage: $2" >&2; exit 2; fi; }
