# Shell helpers shared by bench/run.sh and bench/intake.sh (sourced, not run). They expect the caller to
# define log(), OUT, SERVER_CPU and an associative array PID.

# A port nobody listens on: other processes on this machine may hold the obvious ones, and Bun's
# listener would otherwise share a port with them and split the load.
free_port() {
  local p=$1
  for _ in $(seq 200); do
    if ! ss -Hltn "sport = :$p" | grep -q .; then echo "$p"; return 0; fi
    p=$((p + 1))
  done
  log "no free port near $1"; return 1
}

start_server() { # name port command...
  local name=$1 port=$2; shift 2
  taskset -c "$SERVER_CPU" "$@" >"$OUT/$name.server.log" 2>&1 &
  PID[$name]=$!
  for _ in $(seq 300); do
    kill -0 "${PID[$name]}" 2>/dev/null || { log "$name exited at start:"; cat "$OUT/$name.server.log" >&2; exit 1; }
    curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  log "$name did not become ready in 30 s"; exit 1
}

stop_server() { # name
  local p=${PID[$1]}
  kill -TERM "$p" 2>/dev/null || true
  for _ in $(seq 150); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
  unset "PID[$1]"
}
