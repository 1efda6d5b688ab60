#!/usr/bin/env bash
# Sweep one provider now. This triggers the provider's sweep schedule rather than starting a
# providerSweep workflow of its own: only a run the schedule starts is handed the last run's
# report, and with it where the look for lost jobs stopped. A sweep started any other way
# starts that look again from the oldest queued runs.
# A sweep already running is not interrupted: the triggered one runs when it is done.
# tctl: tctl --ns default schedule trigger --sid sweep/PROVIDER --overlap_policy BufferOne
source "$(dirname "$0")/lib.sh"
usage_if_missing "${1:-}" "sweep.sh PROVIDER"
schedule="sweep/$1"
if ! described="$(t schedule describe --schedule-id "$schedule" --output json 2>&1)"; then
  if grep -qi "not found" <<<"$described"; then
    echo "no sweep schedule '$schedule': is '$1' a provider in the config, and has a worker started with it?" >&2
  else
    echo "could not read the schedule '$schedule': $described" >&2
  fi
  exit 1
fi
t schedule trigger --schedule-id "$schedule" --overlap-policy BufferOne >/dev/null
if grep -q '"paused": *true' <<<"$described"; then
  echo "$schedule triggered (the schedule itself is paused: the sweep is disabled in the config, so only this run happens)"
else
  echo "$schedule triggered"
fi
