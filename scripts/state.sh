#!/usr/bin/env bash
# Print a runner's state (status, runner status, ids, transitions) as JSON.
# tctl: tctl --ns default workflow query --workflow_id runner/NAME --query_type state
source "$(dirname "$0")/lib.sh"
usage_if_missing "${1:-}" "state.sh NAME"
t workflow query --workflow-id "runner/$1" --name state --output json
