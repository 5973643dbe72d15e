#!/usr/bin/env bash
# A real MySQL server for the integration tests, without Docker.
#
# Installs Debian sid's mysql-server (MySQL 9.x) into a chroot with mmdebstrap, once, cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/outbox-router/mysql-chroot (about 470 MB; the first build takes about 50 s), then runs
# mysqld from it on 127.0.0.1 with a row binlog and GTIDs, on a fresh data directory for every `start`.
# The chroot shares the host's network and pids: clients outside reach 127.0.0.1:PORT.
#
# Requires: root (chroot; mmdebstrap's root mode), Linux, network access to a Debian mirror on the first run.
# mmdebstrap is installed with apt-get when missing. python3 is used to pick a free port when present.
#
# Usage:
#   scripts/mysql-server.sh start            fresh server; last stdout lines are OUTBOX_IT_MYSQL_URL/USER/PASSWORD=...
#   scripts/mysql-server.sh stop [PORT]      stop it and delete its data
#   scripts/mysql-server.sh restart [PORT]   SIGKILL mysqld (a crash) and start it again on the same data and port
#   scripts/mysql-server.sh kill [PORT]      SIGKILL mysqld (a crash), keeping its data for a later restart
#   scripts/mysql-server.sh status [PORT]    say whether it runs (exit 0) or not (exit 1)
#   scripts/mysql-server.sh url [PORT]       print the OUTBOX_IT_MYSQL_* lines of the running server
# e.g.  eval "$(scripts/mysql-server.sh start | grep ^OUTBOX_IT_MYSQL_)"
#
# Environment: MYSQL_PORT (port for start; also selects the server for the other commands),
# OUTBOX_MYSQL_MIRROR (Debian mirror; default: the machine's apt mirror), OUTBOX_MYSQL_CHROOT (chroot location).
# Without PORT or MYSQL_PORT, stop/restart/status/url act on the only server running from the chroot.
# Everything but the OUTBOX_IT_MYSQL_* lines goes to stderr.
#
# MySQL 9 authenticates with caching_sha2_password: JDBC clients over plain TCP need allowPublicKeyRetrieval=true
# (or TLS, which Connector/J uses by default) once the server's password cache is empty, e.g. after a restart.
set -euo pipefail
shopt -s nullglob

readonly CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/outbox-router"
readonly CHROOT="$(realpath -m "${OUTBOX_MYSQL_CHROOT:-$CACHE_DIR/mysql-chroot}")"
readonly MARKER=.outbox-mysql-version       # in the chroot, written last: the build is complete
readonly INSTANCES=/var/lib/outbox-mysql    # inside the chroot: one directory per server, named by its port
readonly DB_USER=outbox DB_PASSWORD=outbox DB_NAME=outbox
readonly READY_TIMEOUT=60

log() { printf 'mysql-server.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

require_root() {
    [[ $EUID -eq 0 ]] && return
    local missing=""
    command -v mmdebstrap >/dev/null || missing=" (mmdebstrap is missing too: apt-get install mmdebstrap)"
    die "must run as root: mysqld runs in a chroot, built by mmdebstrap in root mode$missing"
}

# --- the cached chroot ---------------------------------------------------------------------------------------

# The archive the machine's apt uses for Debian itself (not debian-security), from deb822 and one-line sources.
debian_mirror() {
    if [[ -n ${OUTBOX_MYSQL_MIRROR:-} ]]; then echo "$OUTBOX_MYSQL_MIRROR"; return; fi
    local uri
    for uri in $( { sed -n 's/^[[:space:]]*URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources
                    sed -n 's/^[[:space:]]*deb[[:space:]]\+\(\[[^]]*\][[:space:]]*\)\?\([^[:space:]]\+\).*/\2/p' \
                        /etc/apt/sources.list /etc/apt/sources.list.d/*.list; } 2>/dev/null ); do
        if [[ $uri =~ ^(https?|file):.*/debian(/[0-9]{8}T[0-9]{6}Z)?/?$ ]]; then echo "$uri"; return; fi
    done
    echo http://deb.debian.org/debian
}

ensure_mmdebstrap() {
    command -v mmdebstrap >/dev/null && return
    log "installing mmdebstrap with apt-get"
    apt-get install -y mmdebstrap >&2 || { apt-get update >&2 && apt-get install -y mmdebstrap >&2; } \
        || die "could not install mmdebstrap with apt-get"
}

mysql_version() { sed -n 's/.* Ver \([^ ]*\).*/MySQL \1/p' "$CHROOT/$MARKER"; }

remove_tree() {  # never crosses into another file system (a leftover mount of /dev or /proc)
    rm -rf --one-file-system -- "$1"
}

# Build into a temporary directory and rename it when complete, so that an interrupted build is never taken
# for the cache. A lock keeps two concurrent first runs from building twice.
ensure_chroot() {
    if [[ -f $CHROOT/$MARKER ]]; then return; fi
    ensure_mmdebstrap
    mkdir -p "$(dirname "$CHROOT")"
    (
        flock 9
        [[ -f $CHROOT/$MARKER ]] && exit 0
        [[ -e $CHROOT ]] && { log "removing incomplete chroot $CHROOT"; remove_tree "$CHROOT"; }
        for stale in "$CHROOT".tmp.*; do remove_tree "$stale"; done
        tmp="$CHROOT.tmp.$$"
        trap 'remove_tree "$tmp"' EXIT
        trap 'exit 1' INT TERM HUP   # so that the EXIT trap runs; a SIGKILLed build is removed by the next one
        mirror="$(debian_mirror)"
        log "building the MySQL chroot in $CHROOT from $mirror (once; about 50 s and 470 MB)"
        started=$SECONDS
        # The sid index on some mirrors is a dated snapshot, which apt would refuse as expired.
        # mysqld and the client only: the mysql-server package's maintainer script, which sets up a system service, can
        # fail in a chroot, and nothing here uses what it sets up.
        mmdebstrap --variant=apt --include=mysql-server-core,mysql-client \
            --aptopt='Acquire::Check-Valid-Until "false"' \
            --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
            --dpkgopt='path-exclude=/usr/share/locale/*' \
            sid "$tmp" "$mirror" >&2
        # The package's own data directory (about 190 MB) is never used: every server gets a fresh one.
        if [[ -d $tmp/var/lib/mysql ]]; then find "$tmp/var/lib/mysql" -mindepth 1 -delete; fi
        chroot "$tmp" /usr/sbin/mysqld --version >"$tmp/$MARKER"
        mv -T "$tmp" "$CHROOT"
        trap - EXIT
        log "chroot ready in $((SECONDS - started)) s: $(mysql_version), $(du -sh "$CHROOT" | cut -f1)"
    ) 9>"$CHROOT.lock"
}

# --- one server --------------------------------------------------------------------------------------------------
# Each server lives in $CHROOT$INSTANCES/PORT: data/, mysqld.log, mysqld.pid and server.env (PID, PORT, env lines).

inst_dir() { echo "$CHROOT$INSTANCES/$1"; }
socket_of() { echo "/run/mysqld/mysqld-$1.sock"; }

in_chroot() { chroot "$CHROOT" "$@"; }
mysql_root() { in_chroot /usr/bin/mysql --no-defaults --socket="$(socket_of "$1")" -uroot "${@:2}"; }

# Alive, not a zombie (pid 1 here may not reap), and our mysqld for that port.
is_our_mysqld() {
    local pid=$1 port=$2 state
    [[ -r /proc/$pid/stat ]] || return 1
    state=$(sed 's/^.*) \(.\).*/\1/' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ $state != Z ]] || return 1
    [[ $(readlink "/proc/$pid/root" 2>/dev/null) == "$CHROOT" ]] || return 1
    tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "--datadir=$INSTANCES/$port/data"
}

free_port() {
    if command -v python3 >/dev/null; then
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' && return
    fi
    local port
    for _ in $(seq 200); do   # below Linux's ephemeral range, so no client connection holds it
        port=$((20000 + RANDOM % 12000))
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
    done
    die "no free port found; set MYSQL_PORT"
}

env_lines() {
    echo "OUTBOX_IT_MYSQL_URL=jdbc:mysql://127.0.0.1:$1/$DB_NAME"
    echo "OUTBOX_IT_MYSQL_USER=$DB_USER"
    echo "OUTBOX_IT_MYSQL_PASSWORD=$DB_PASSWORD"
}

# Starts mysqld in the background, detached from this script (its own session, output in mysqld.log, so that
# `$(scripts/mysql-server.sh start)` returns), and waits until it accepts connections. Prints its pid.
launch() {
    local port=$1 dir
    dir=$(inst_dir "$port")
    # run/mysqld for the sockets; var/lib/mysql-files is mysqld's default --secure-file-priv, which it refuses to start without.
    mkdir -p "$CHROOT/run/mysqld" "$CHROOT/var/lib/mysql-files"
    # Left by a killed mysqld; a new one refuses to start while the lock names a pid that still exists (a zombie).
    rm -f "$CHROOT$(socket_of "$port")" "$CHROOT$(socket_of "$port").lock"
    setsid chroot "$CHROOT" /usr/sbin/mysqld --no-defaults --user=root --datadir="$INSTANCES/$port/data" \
        --pid-file="$INSTANCES/$port/mysqld.pid" --port="$port" --bind-address=127.0.0.1 \
        --socket="$(socket_of "$port")" --mysqlx=OFF --server-id=1 --log-bin=binlog --binlog-format=ROW \
        --binlog-row-image=FULL --gtid-mode=ON --enforce-gtid-consistency=ON \
        </dev/null >>"$dir/mysqld.log" 2>&1 &
    local pid=$! deadline=$((SECONDS + READY_TIMEOUT))
    until in_chroot /usr/bin/mysqladmin --no-defaults --socket="$(socket_of "$port")" -uroot \
            --connect-timeout=2 ping >/dev/null 2>&1; do
        # Gone or a zombie; not "no longer looks like our mysqld": right after the fork it has not entered the chroot yet.
        if is_gone "$pid"; then
            wait "$pid" 2>/dev/null || true
            log "mysqld exited before accepting connections; end of $dir/mysqld.log:"
            tail -n 25 "$dir/mysqld.log" >&2
            return 1
        fi
        if ((SECONDS >= deadline)); then
            log "mysqld did not accept connections within $READY_TIMEOUT s; end of $dir/mysqld.log:"
            tail -n 25 "$dir/mysqld.log" >&2
            kill -KILL "$pid" 2>/dev/null || true
            return 1
        fi
        sleep 0.2
    done
    echo "$pid"
}

# A successful login over the socket fills the server's caching_sha2_password cache, so that clients over
# plain TCP then authenticate without the server's RSA key, until the server restarts.
warm_password_cache() {
    local out
    out=$(in_chroot /usr/bin/mysql --no-defaults --socket="$(socket_of "$1")" -u"$DB_USER" -p"$DB_PASSWORD" \
        -e 'SELECT 1' 2>&1) || die "login as $DB_USER failed: $out"
}

write_state() {
    local port=$1 pid=$2
    { echo "PID=$pid"; echo "PORT=$port"; env_lines "$port"; } >"$(inst_dir "$port")/server.env"
}

state_pid() { sed -n 's/^PID=//p' "$(inst_dir "$1")/server.env" 2>/dev/null; }

# The server the stop/restart/status/url commands act on: PORT, $MYSQL_PORT, or the only one there is.
select_port() {
    if [[ -n ${1:-} ]]; then echo "$1"; return; fi
    if [[ -n ${MYSQL_PORT:-} ]]; then echo "$MYSQL_PORT"; return; fi
    local ports=() d
    for d in "$CHROOT$INSTANCES"/*/server.env; do d=${d%/server.env}; ports+=("${d##*/}"); done
    case ${#ports[@]} in
        1) echo "${ports[0]}" ;;
        0) die "no server started by this script (state under $CHROOT$INSTANCES)" ;;
        *) die "several servers (ports ${ports[*]}): name one, e.g. $0 ${CMD:-stop} ${ports[0]}" ;;
    esac
}

# Gone, or a zombie. Not "no longer looks like our mysqld": a dying process loses its root before it exits,
# and mysqld's socket lock still sees its pid until then.
is_gone() {
    local state
    state=$(sed 's/^.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 0
    [[ $state == [ZX] ]]
}

wait_gone() {  # pid seconds
    local deadline=$((SECONDS + $2))
    until is_gone "$1"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

cmd_start() {
    require_root
    ensure_chroot
    local attempt port pid dir
    for attempt in 1 2 3; do
        port=${MYSQL_PORT:-$(free_port)}
        dir=$(inst_dir "$port")
        if [[ -f $dir/server.env ]] && is_our_mysqld "$(state_pid "$port")" "$port"; then
            die "a server already runs on port $port: $0 stop $port"
        fi
        remove_tree "$dir"
        mkdir -p "$dir"
        log "initialising a fresh data directory ($INSTANCES/$port/data in the chroot)"
        in_chroot /usr/sbin/mysqld --no-defaults --initialize-insecure --user=root \
            --datadir="$INSTANCES/$port/data" >"$dir/initialize.log" 2>&1 \
            || { tail -n 25 "$dir/initialize.log" >&2; die "mysqld --initialize-insecure failed"; }
        log "starting $(mysql_version) on 127.0.0.1:$port"
        if pid=$(launch "$port"); then break; fi
        # Someone else took the port between choosing and binding it: try another, unless it was asked for.
        if [[ -z ${MYSQL_PORT:-} ]] && grep -q 'Address already in use' "$dir/mysqld.log"; then
            log "port $port was taken meanwhile; trying another"
            remove_tree "$dir"; continue
        fi
        remove_tree "$dir"
        die "mysqld failed to start"
    done
    [[ -n ${pid:-} ]] || die "no free port after 3 attempts; set MYSQL_PORT"
    mysql_root "$port" -e "
        CREATE USER '$DB_USER'@'%' IDENTIFIED BY '$DB_PASSWORD';
        GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'%' WITH GRANT OPTION;
        CREATE DATABASE $DB_NAME;" >&2
    warm_password_cache "$port"
    write_state "$port" "$pid"
    log "ready: pid $pid, port $port, state in $dir/server.env; stop with: $0 stop $port"
    log "JDBC over plain TCP: add allowPublicKeyRetrieval=true (MySQL 9 uses caching_sha2_password)"
    env_lines "$port"
}

cmd_stop() {
    require_root
    local port pid
    port=$(select_port "${1:-}")
    pid=$(state_pid "$port")
    if [[ -n $pid ]] && is_our_mysqld "$pid" "$port"; then
        log "stopping mysqld (pid $pid, port $port)"
        in_chroot /usr/bin/mysqladmin --no-defaults --socket="$(socket_of "$port")" -uroot shutdown >/dev/null 2>&1 \
            || kill -TERM "$pid" 2>/dev/null || true
        if ! wait_gone "$pid" 60; then
            log "mysqld still running after 60 s; killing it"
            kill -KILL "$pid" 2>/dev/null || true
            wait_gone "$pid" 10 || die "could not stop mysqld pid $pid"
        fi
    else
        log "no mysqld running on port $port; removing its data"
    fi
    remove_tree "$(inst_dir "$port")"
    rm -f "$CHROOT$(socket_of "$port")" "$CHROOT$(socket_of "$port").lock"
    log "stopped; data removed"
}

cmd_restart() {
    require_root
    local port pid
    port=$(select_port "${1:-}")
    [[ -d $(inst_dir "$port")/data ]] || die "no data for port $port: use start"
    pid=$(state_pid "$port")
    if [[ -n $pid ]] && is_our_mysqld "$pid" "$port"; then
        log "killing mysqld (pid $pid) with SIGKILL"
        kill -KILL "$pid"
        wait_gone "$pid" 30 || die "mysqld pid $pid survived SIGKILL"
    fi
    log "starting mysqld again on the same data directory and port $port"
    pid=$(launch "$port") || die "mysqld failed to restart"
    warm_password_cache "$port"
    write_state "$port" "$pid"
    log "ready again: pid $pid, port $port"
    env_lines "$port"
}

cmd_kill() {
    require_root
    local port pid
    port=$(select_port "${1:-}")
    pid=$(state_pid "$port")
    if [[ -n $pid ]] && is_our_mysqld "$pid" "$port"; then
        log "killing mysqld (pid $pid) with SIGKILL; its data stays for: $0 restart $port"
        kill -KILL "$pid"
        wait_gone "$pid" 30 || die "mysqld pid $pid survived SIGKILL"
    else
        log "no mysqld running on port $port"
    fi
}

cmd_status() {
    local port pid
    port=$(select_port "${1:-}")
    pid=$(state_pid "$port")
    if [[ -n $pid ]] && is_our_mysqld "$pid" "$port"; then
        log "running: pid $pid, 127.0.0.1:$port, $(mysql_version)"
    else
        log "not running (port $port)"; return 1
    fi
}

cmd_url() {
    local port
    port=$(select_port "${1:-}")
    cmd_status "$port" 2>/dev/null || die "no server running on port $port"
    env_lines "$port"
}

CMD=${1:-}
case $CMD in
    start) cmd_start ;;
    stop | restart | kill | status | url) shift; "cmd_$CMD" "$@" ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
