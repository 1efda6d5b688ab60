#!/usr/bin/env bash
# Force-delete a runner: one bounded best-effort provider delete, then the workflow ends.
# tctl: tctl --ns default workflow signal --workflow_id runner/NAME --name forceDelete --input '{"reason":"..."}'
source "$(dirname "$0")/lib.sh"
usage_if_missing "${1:-}" "force-delete.sh NAME [REASON]"
reason="${2:-forced by operator}"
t workflow signal --workflow-id "runner/$1" --name forceDelete --input "{\"reason\":$(json_string "$reason")}"
