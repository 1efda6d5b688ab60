#!/usr/bin/env bash
# A real Temporal server (v1.32.0, the version inside Temporal CLI 1.9.1's dev server) on
# PostgreSQL 15, to compare the benches against the SQLite dev server of ../temporal-dev.sh.
# Everything lives in one state dir; it never touches the dev server's ports or database.
#
#   bench/temporal-postgres.sh install   build temporal-server and temporal-sql-tool with `go install` if missing
#   bench/temporal-postgres.sh start     init/start PostgreSQL, load the schemas, start the server in the
#                                        background, create namespace `default` and the project's search
#                                        attributes, print the address (idempotent; a restart keeps the data)
#   bench/temporal-postgres.sh stop      stop the server, then PostgreSQL
#   bench/temporal-postgres.sh status    say what is running (exit 3 when the frontend does not answer)
#   bench/temporal-postgres.sh reset     stop and delete the database cluster (keeps the built binaries)
#
# Then: TEMPORAL_ADDRESS=127.0.0.1:7234 npx tsx bench/<bench>.ts
#
# Environment (all optional): TEMPORAL_PG_STATE_DIR (.temporal/pg), TEMPORAL_PG_PORT (5433),
# TEMPORAL_PG_FRONTEND_PORT (7234), TEMPORAL_PG_BIN (/usr/lib/postgresql/15/bin), GO (go on PATH,
# else /usr/local/go/bin/go).
set -euo pipefail

SERVER_VERSION=v1.32.0
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE_DIR="${TEMPORAL_PG_STATE_DIR:-$ROOT/.temporal/pg}"
PG_BIN="${TEMPORAL_PG_BIN:-/usr/lib/postgresql/15/bin}"
PG_PORT="${TEMPORAL_PG_PORT:-5433}"
IP=127.0.0.1
FRONTEND_PORT="${TEMPORAL_PG_FRONTEND_PORT:-7234}"
BIN="$STATE_DIR/bin" DATA="$STATE_DIR/data" PID_FILE="$STATE_DIR/server.pid" LOG_FILE="$STATE_DIR/server.log"
PG_LOG="$STATE_DIR/postgres.log" CONFIG="$STATE_DIR/config.yaml" DYNAMIC_CONFIG="$STATE_DIR/dynamicconfig.yaml"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
SEARCH_ATTRIBUTES=(RunnerStatus=Keyword RunnerPool=Keyword RunnerProvider=Keyword RunnerName=Keyword RunnerLeaked=Bool)

say() { printf 'temporal-postgres: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# The schema tool and initdb are chatty; their output only matters when they fail.
quiet() { local out; out="$("$@" 2>&1)" || { printf '%s\n' "$out" >&2; return 1; }; }

install_bins() {
  [ -x "$BIN/temporal-server" ] && [ -x "$BIN/temporal-sql-tool" ] && return 0
  mkdir -p "$BIN"
  say "building Temporal Server $SERVER_VERSION and its SQL tool into $BIN (about 5 minutes)"
  GOBIN="$BIN" nice "$GO" install \
    "go.temporal.io/server/cmd/server@$SERVER_VERSION" "go.temporal.io/server/cmd/tools/sql@$SERVER_VERSION"
  # go install names binaries after their package directory: `server` and `sql` say too little.
  mv -f "$BIN/server" "$BIN/temporal-server"
  mv -f "$BIN/sql" "$BIN/temporal-sql-tool"
}

# The versioned schema files ship in the server module's source, not in the binaries; `go mod
# download` finds the module (or fetches it again after a `go clean -modcache`).
schema_dir() {
  local mod
  mod="$("$GO" mod download -json "go.temporal.io/server@$SERVER_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [ -d "$mod/schema/postgresql/v12" ] || die "no PostgreSQL schema in the module cache ($mod)"
  echo "$mod/schema/postgresql/v12"
}

# postgres refuses to run as root: then the cluster belongs to the `postgres` system user.
PG_OS_USER="$(id -un)"
[ "$(id -u)" = 0 ] && PG_OS_USER=postgres
as_pg() {
  if [ "$PG_OS_USER" = "$(id -un)" ]; then "$@"
  elif command -v runuser >/dev/null 2>&1; then runuser -u "$PG_OS_USER" -- "$@"
  else su -s /bin/sh "$PG_OS_USER" -c "$(printf '%q ' "$@")"; fi
}
pg_running() { [ -f "$DATA/PG_VERSION" ] && as_pg "$PG_BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }
psql_q() { "$PG_BIN/psql" -h "$IP" -p "$PG_PORT" -U temporal -X -tAq "$@"; }

start_postgres() {
  if [ ! -f "$DATA/PG_VERSION" ]; then
    say "initialising a PostgreSQL cluster in $DATA"
    id "$PG_OS_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_OS_USER"
    mkdir -p "$DATA" && chown "$PG_OS_USER" "$DATA" && chmod 700 "$DATA"
    as_pg test -w "$DATA" || die "$PG_OS_USER cannot write $DATA (is a parent directory not traversable?)"
    # Superuser `temporal` with trust auth: it only listens on 127.0.0.1, and the tools need no password.
    quiet as_pg "$PG_BIN/initdb" -D "$DATA" -U temporal --auth=trust --encoding=UTF8 --locale=C
    # Durability stays at the defaults (fsync, synchronous_commit, full_page_writes on): the dev
    # server's SQLite commits durably too, and turning them off would flatter PostgreSQL.
    # 4 services x (20 + 10) pooled connections (see config.yaml) need more than the default 100.
    printf '%s\n' "listen_addresses = '$IP'" "unix_socket_directories = ''" \
      'max_connections = 200' 'shared_buffers = 256MB' >>"$DATA/postgresql.conf"
  fi
  touch "$PG_LOG" && chown "$PG_OS_USER" "$PG_LOG"
  pg_running && return 0
  # The port goes on the command line so TEMPORAL_PG_PORT also applies to an existing cluster.
  quiet as_pg "$PG_BIN/pg_ctl" -D "$DATA" -l "$PG_LOG" -o "-p $PG_PORT" -w -t 60 start \
    || { tail -n 20 "$PG_LOG" >&2; die "PostgreSQL did not start; see $PG_LOG"; }
}

# Each step is checked on its own, so a start interrupted half-way finishes the job next time;
# update-schema is a no-op once a database is at the binaries' version.
load_schemas() {
  local dir db sub tool
  dir="$(schema_dir)"
  for db in temporal temporal_visibility; do
    sub=temporal; [ "$db" = temporal_visibility ] && sub=visibility
    tool=("$BIN/temporal-sql-tool" --plugin postgres12 --ep "$IP" -p "$PG_PORT" -u temporal --db "$db")
    [ "$(psql_q -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" = 1 ] \
      || quiet "${tool[@]}" create-database --defaultdb postgres
    [ -n "$(psql_q -d "$db" -c "SELECT to_regclass('schema_version')")" ] || quiet "${tool[@]}" setup-schema -v 0.0
    quiet "${tool[@]}" update-schema -d "$dir/$sub/versioned" || die "schema update of $db failed"
  done
}

# Adapted from the module's config/development-postgres12.yaml (no archival, pprof or metrics).
# Ports keep clear of the dev server's 7233-7240 and 8233: internal gRPC 73xx, membership 74xx.
write_config() {
  cat >"$CONFIG" <<EOF
log: {stdout: true, level: warn}
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: 4
  datastores:
    postgres-default:
      sql: &sql {pluginName: "postgres12", databaseName: "temporal", connectAddr: "$IP:$PG_PORT",
                 connectProtocol: "tcp", user: "temporal", password: "",
                 maxConns: 20, maxIdleConns: 20, maxConnLifetime: "1h"}
    postgres-visibility:
      # 10, not the sample's 2: every search-attribute upsert of the runners is written through it.
      sql: {<<: *sql, databaseName: "temporal_visibility", maxConns: 10, maxIdleConns: 10}
global:
  membership: {maxJoinDuration: 30s, broadcastAddress: "$IP"}
services:
  frontend: {rpc: {grpcPort: $FRONTEND_PORT, httpPort: 7344, membershipPort: 7434, bindOnLocalHost: true}}
  history:  {rpc: {grpcPort: 7335, membershipPort: 7435, bindOnLocalHost: true}}
  matching: {rpc: {grpcPort: 7336, membershipPort: 7436, bindOnLocalHost: true}}
  worker:   {rpc: {grpcPort: 7339, membershipPort: 7439, bindOnLocalHost: true}}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active: {enabled: true, initialFailoverVersion: 1, rpcName: "frontend", rpcAddress: "$IP:$FRONTEND_PORT", httpAddress: "$IP:7344"}
dcRedirectionPolicy: {policy: "noop"}
archival: {history: {state: "disabled"}, visibility: {state: "disabled"}}
namespaceDefaults: {archival: {history: {state: "disabled"}, visibility: {state: "disabled"}}}
dynamicConfigClient: {filepath: "$DYNAMIC_CONFIG", pollInterval: "10s"}
EOF
  # The overrides `temporal server start-dev` (CLI 1.9.1) applies, so that only the persistence differs.
  cat >"$DYNAMIC_CONFIG" <<EOF
history.hostLevelCacheMaxSize: [{value: 8096}]
frontend.namespaceRPS.visibility: [{value: 100}]
history.enableChasm: [{value: true}]
activity.enableStandalone: [{value: true}]
history.enableStandaloneActivityOperatorCommands: [{value: true}]
frontend.enableBatchOperationsForStandaloneActivities: [{value: true}]
EOF
}

cli() { "$CLI" "$@" --address "$IP:$FRONTEND_PORT"; }
healthy() { cli operator cluster health >/dev/null 2>&1; }
server_pid() { [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null && cat "$PID_FILE"; }

wait_healthy() {
  for _ in $(seq 1 120); do
    healthy && return 0
    server_pid >/dev/null || { tail -n 20 "$LOG_FILE" >&2; die "server exited during start; see $LOG_FILE"; }
    sleep 0.5
  done
  die "server did not answer on $IP:$FRONTEND_PORT within 60s; see $LOG_FILE"
}

# Unlike start-dev, a plain server creates neither the namespace nor the search attributes.
setup_namespace() {
  cli operator namespace describe --namespace default >/dev/null 2>&1 \
    || cli operator namespace create --namespace default --retention 1d >/dev/null
  local have="" missing=() sa
  # The frontend's namespace cache may not know a namespace created a moment ago.
  for _ in $(seq 1 30); do have="$(cli operator search-attribute list --namespace default 2>/dev/null)" && break; sleep 1; done
  for sa in "${SEARCH_ATTRIBUTES[@]}"; do
    grep -qw "${sa%%=*}" <<<"$have" || missing+=(--name "${sa%%=*}" --type "${sa#*=}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  cli operator search-attribute create --namespace default "${missing[@]}" >/dev/null
  # history and matching see new aliases after their namespace cache refresh (2s by default).
  sleep 3
}

stop_all() {
  local pid
  if pid="$(server_pid)"; then
    kill "$pid"
    for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; say "server did not stop within 30s: killed"; fi
    say "server stopped"
  fi
  rm -f "$PID_FILE"
  if pg_running; then quiet as_pg "$PG_BIN/pg_ctl" -D "$DATA" -m fast -w stop && say "PostgreSQL stopped"; fi
}

cmd="${1:-start}"
case "$cmd" in
  install) install_bins ;;
  start)
    install_bins
    CLI="$("$ROOT/temporal-dev.sh" path)"
    start_postgres
    if server_pid >/dev/null; then
      wait_healthy
    else
      healthy && die "something else answers on $IP:$FRONTEND_PORT"
      load_schemas
      write_config
      # Its own session, as in temporal-dev.sh: the caller's Ctrl-C never reaches the server.
      setsid "$BIN/temporal-server" --config-file "$CONFIG" --allow-no-auth start </dev/null >"$LOG_FILE" 2>&1 &
      echo $! >"$PID_FILE"
      wait_healthy
    fi
    setup_namespace
    say "running on $IP:$FRONTEND_PORT (pid $(cat "$PID_FILE"), PostgreSQL on $IP:$PG_PORT, log $LOG_FILE)"
    echo "$IP:$FRONTEND_PORT"
    ;;
  stop) stop_all ;;
  status)
    CLI="$("$ROOT/temporal-dev.sh" path)"
    if pg_running; then say "PostgreSQL running on $IP:$PG_PORT"; else say "PostgreSQL not running"; fi
    if healthy; then say "server running on $IP:$FRONTEND_PORT"; else say "server not running on $IP:$FRONTEND_PORT"; exit 3; fi
    ;;
  reset) stop_all; rm -rf "$DATA" "$CONFIG" "$DYNAMIC_CONFIG"; say "deleted $DATA" ;;
  *) say "unknown command '$cmd' (install|start|stop|status|reset)"; exit 2 ;;
esac
