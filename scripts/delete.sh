#!/usr/bin/env bash
# Gracefully delete a runner: unregister from GitHub unless busy, then delete the machine with backoff.
# tctl: tctl --ns default workflow signal --workflow_id runner/NAME --name delete --input '{"reason":"..."}'
source "$(dirname "$0")/lib.sh"
usage_if_missing "${1:-}" "delete.sh NAME [REASON]"
reason="${2:-deleted by operator}"
t workflow signal --workflow-id "runner/$1" --name delete --input "{\"reason\":$(json_string "$reason")}"
