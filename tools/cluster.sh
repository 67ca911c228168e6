#!/usr/bin/env bash
# Runs Stepthrough as a cluster on this machine, the way deploy/compose.yaml
# does with containers: N servers (default 3) on ports 8081…, one
# PostgreSQL database (Debian's cluster, through tools/services.sh), one
# nats-server on 4222 and Caddy on 8080 with deploy/Caddyfile. Ctrl-C
# stops them all. Needs postgresql, nats-server and caddy (apt). NATS takes
# only the user "stepthrough" with $STEPTHROUGH_BUS_PASSWORD (a random one
# when unset), from a config file, so the password is in no process list.
#   bash tools/cluster.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-3}"
eval "$(bash tools/services.sh)"
: "${STEPTHROUGH_POSTGRES:?no PostgreSQL: apt install postgresql}"
: "${STEPTHROUGH_NATS_SERVER:?no nats-server: apt install nats-server}"
command -v caddy >/dev/null || { echo "no caddy: apt install caddy" >&2; exit 1; }
db="${STEPTHROUGH_POSTGRES/\/postgres\?/\/stepthrough_cluster?}"
psql "$STEPTHROUGH_POSTGRES" -qtAc "SELECT 1 FROM pg_database WHERE datname = 'stepthrough_cluster'" | grep -q 1 ||
  psql "$STEPTHROUGH_POSTGRES" -qc "CREATE DATABASE stepthrough_cluster"
go build -o /tmp/stepthrough-cluster .
export STEPTHROUGH_BUS_PASSWORD="${STEPTHROUGH_BUS_PASSWORD:-$(head -c 24 /dev/urandom | base64 | tr -d '/+=')}"
natsconf="$(mktemp)"
printf 'authorization { user: stepthrough, password: "%s" }\n' "$STEPTHROUGH_BUS_PASSWORD" >"$natsconf"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait; rm -f "$natsconf"' EXIT INT TERM
"$STEPTHROUGH_NATS_SERVER" -a 127.0.0.1 -p 4222 -c "$natsconf" & pids+=($!)
upstreams=""
for i in $(seq 1 "$n"); do
  port=$((8080 + i))
  /tmp/stepthrough-cluster serve --addr "127.0.0.1:$port" --store "$db" --bus nats://127.0.0.1:4222 --bus-user stepthrough \
    --data-dir "$(mktemp -d)" --trusted-proxies 127.0.0.1/32 --allowed-hosts localhost,127.0.0.1 \
    --max-students 1000 --students-per-address 1000 2> >(sed "s/^/[$port] /" >&2) & pids+=($!)
  upstreams="$upstreams 127.0.0.1:$port"
done
SITE=:8080 UPSTREAMS="$upstreams" caddy run --config deploy/Caddyfile --adapter caddyfile 2>/dev/null & pids+=($!)
echo "cluster: http://127.0.0.1:8080 (Caddy) →$upstreams; NATS 127.0.0.1:4222; PostgreSQL database stepthrough_cluster" >&2
wait
