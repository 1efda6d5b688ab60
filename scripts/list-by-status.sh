#!/usr/bin/env bash
# List runner workflows in one instance status, optionally of one pool.
# tctl: tctl --ns default workflow list --query 'RunnerStatus="running" AND RunnerPool="POOL"'
source "$(dirname "$0")/lib.sh"
usage_if_missing "${1:-}" "list-by-status.sh STATUS [POOL]"
case "$1" in
  pending_create|creating|running|stopped|error|pending_delete|pending_force_delete|deleting|deleted) ;;
  *) echo "unknown status '$1' (pending_create creating running stopped error pending_delete pending_force_delete deleting deleted)" >&2; exit 2 ;;
esac
query="WorkflowType=\"runnerInstance\" AND RunnerStatus=\"$1\""
if [ -n "${2:-}" ] && ! [[ "$2" =~ ^[a-z0-9-]+$ ]]; then echo "pool name '$2' is not valid (lowercase letters, digits, dashes)" >&2; exit 2; fi
if [ -n "${2:-}" ]; then query="$query AND RunnerPool=\"$2\""; fi
t workflow list --query "$query" --output "${OUTPUT:-text}"
