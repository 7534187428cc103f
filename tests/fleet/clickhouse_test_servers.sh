# Sourced by the fleet tests and bench: starts real clickhouse-server
# processes on 127.0.0.1 and free ports, in a temp dir, stopped by pid.
#   ch_start NAME [CLUSTER_XML]   -> sets CH_HTTP_<NAME>, CH_TCP_<NAME>, CH_PID_<NAME>
#   ch_query NAME SQL             -> TabSeparated result on stdout
#   ch_kill NAME / ch_stop_all
# Needs $CH_ROOT (a temp dir the caller removes). clickhouse-server runs as
# root without complaint when its paths are its own; nothing else is needed.

ch_free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

ch_write_config() {  # NAME CLUSTER_XML
  local dir="$CH_ROOT/$1"
  mkdir -p "$dir/data" "$dir/tmp"
  cat >"$dir/config.xml" <<XML
<yandex>
  <logger><level>warning</level><log>$dir/log</log><errorlog>$dir/err</errorlog><console>0</console></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>$(eval echo \$CH_HTTP_$1)</http_port>
  <tcp_port>$(eval echo \$CH_TCP_$1)</tcp_port>
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <users_config>$dir/users.xml</users_config>
  <mark_cache_size>5368709</mark_cache_size>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <remote_servers>$2</remote_servers>
</yandex>
XML
  cat >"$dir/users.xml" <<XML
<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
XML
}

ch_launch() {  # NAME: (re)starts the server from its config, waits until it answers (10 s at most)
  local dir="$CH_ROOT/$1"
  clickhouse-server --config-file="$dir/config.xml" >>"$dir/stdout" 2>&1 &
  eval "CH_PID_$1=$!"
  local i=0
  until ch_query "$1" 'SELECT 1' >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 200 ] || { cat "$dir/err" "$dir/stdout" >&2; return 1; }
    sleep 0.05
  done
}

ch_start() {  # NAME [CLUSTER_XML]
  eval "CH_HTTP_$1=$(ch_free_port)"
  eval "CH_TCP_$1=$(ch_free_port)"
  ch_write_config "$1" "${2:-}"
  ch_launch "$1"
}

ch_query() { clickhouse-client --host 127.0.0.1 --port "$(eval echo \$CH_TCP_$1)" -q "$2"; }

ch_kill() {  # NAME: SIGKILL, as a crash or a pulled cable would
  local pid
  pid=$(eval echo "\${CH_PID_$1:-}")
  [ -n "$pid" ] || return 0
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  eval "CH_PID_$1="
}
