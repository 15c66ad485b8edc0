# tests/fleet/promlib.sh — Debian's node_exporter and Prometheus on loopback, for the tests
# that follow the epilog's counters into them (tests/fleet/prometheus.sh, tests/slurm/run.sh).
# Sourced; the caller keeps the started processes' ids in its array `pids` and stops them.
#
#   free_port                              a free port on 127.0.0.1
#   start_node_exporter TEXTFILE_DIR LOG   node_exporter with only its textfile collector;
#                                          sets np; fills metrics.txt beside LOG once it answers
#   start_prometheus DIR NP ROOT LOG       Prometheus scraping 127.0.0.1:NP every second with
#                                          ROOT/docs/fleet-rules.yml loaded; sets pp
#   prom_query PROMQL                      the query's result array as JSON ([] until it has one)
#   prom_wait PROMQL [TRIES]               prom_query every 0.2 s until the result is not []

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_node_exporter() {
  local dir=$1 log=$2
  np=$(free_port)
  prometheus-node-exporter --web.listen-address="127.0.0.1:$np" --collector.disable-defaults --collector.textfile \
    --collector.textfile.directory="$dir" > "$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$np/metrics" > "$(dirname "$log")/metrics.txt" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

start_prometheus() {
  local dir=$1 target=$2 root=$3 log=$4
  pp=$(free_port)
  prom_dir=$dir
  cat > "$dir/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $root/docs/fleet-rules.yml
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['127.0.0.1:$target']
YML
  prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
    --web.listen-address="127.0.0.1:$pp" > "$log" 2>&1 &
  pids+=($!)
}

prom_query() {
  curl -s -G --max-time 5 "http://127.0.0.1:$pp/api/v1/query" --data-urlencode "query=$1" > "$prom_dir/q.json" 2>/dev/null \
    || echo '{}' > "$prom_dir/q.json"  # not up yet
  python3 -c 'import json,sys
try: print(json.dumps(json.load(open(sys.argv[1]))["data"]["result"]))
except Exception: print("[]")' "$prom_dir/q.json"
}

prom_wait() {
  local r="[]"
  for _ in $(seq "${2:-150}"); do
    r=$(prom_query "$1")
    [ "$r" != "[]" ] && break
    sleep 0.2
  done
  echo "$r"
}
