#!/usr/bin/env bash
# run.sh runs the lockmux benchmarks against five fresh redis-server
# processes and prints a benchstat table and a summary of ratios: each peer
# against the floor and against lockmux, from the same run.
#
#   ./run.sh                                  # every scenario, 6 runs each
#   BENCH_COUNT=1 BENCH_PATTERN=Serial ./run.sh
#
# Environment:
#   BENCH_COUNT    go test -count (default 6)
#   BENCH_PATTERN  go test -bench pattern (default .)
#   BENCH_TIME     go test -benchtime (default: go test's, 1s)
#   BENCH_OUT_DIR  where the raw output is saved (default bench/results)
#   LOCKMUX_BENCH_HOLDS       BenchmarkHolds's numbers of holds (default
#                             1000,10000; add 100000 for its targets)
#   LOCKMUX_BENCH_HOLDS_KEEP  how long BenchmarkHolds keeps them (default 25s)
#
# The servers listen on 127.0.0.1 only, keep nothing on disk, live in a
# temporary directory of their own, and are stopped, by their pid, when the
# script ends: normally, on failure or on Ctrl-C.
set -euo pipefail

bench_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
count=${BENCH_COUNT:-6}
pattern=${BENCH_PATTERN:-.}
out_dir=${BENCH_OUT_DIR:-$bench_dir/results}
server_count=5

work_dir=$(mktemp -d "${TMPDIR:-/tmp}/lockmux-bench.XXXXXX")
server_pids=()

# cleanup stops the servers this script started, and only those.
cleanup() {
	local pid
	for pid in "${server_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${server_pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work_dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# answers_ping reports whether a Redis server answers PING on 127.0.0.1:$1,
# through bash's /dev/tcp (redis-cli may not be installed).
answers_ping() {
	local reply
	reply=$(
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'PING\r\n' >&3
		read -r -t 1 line <&3 && echo "$line"
	) 2>/dev/null || return 1
	[[ $reply == +PONG* ]]
}

# port_in_use reports whether something accepts connections on 127.0.0.1:$1.
port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# start_server starts one redis-server on a free port, waits until it
# answers PING, and appends its pid and address to server_pids and
# addresses. A port taken between the check and the start is retried.
start_server() {
	local index=$1 attempt port dir pid
	for attempt in 1 2 3 4 5 6 7 8 9 10; do
		# Below Linux's ephemeral range (32768 and up by default), where
		# outgoing connections may hold a port that no server listens on.
		port=$((20000 + RANDOM % 12000))
		if port_in_use "$port"; then
			continue
		fi
		dir="$work_dir/node$index-$port"
		mkdir -p "$dir"
		redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" \
			--save '' --appendonly no --daemonize no \
			--logfile "$dir/redis.log" &
		pid=$!
		server_pids+=("$pid")
		for _ in $(seq 100); do
			if answers_ping "$port" 2>/dev/null; then
				addresses+=("127.0.0.1:$port")
				return 0
			fi
			if ! kill -0 "$pid" 2>/dev/null; then
				break
			fi
			sleep 0.05
		done
		echo "redis-server on port $port did not start (attempt $attempt):" >&2
		tail -n 5 "$dir/redis.log" >&2 || true
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		unset 'server_pids[-1]'
	done
	echo "could not start redis-server" >&2
	return 1
}

if ! command -v redis-server >/dev/null 2>&1; then
	echo "redis-server is not on the PATH; install it (apt-get install redis-server)" >&2
	exit 1
fi

addresses=()
for index in $(seq "$server_count"); do
	start_server "$index"
done
LOCKMUX_BENCH_ADDRS=$(
	IFS=,
	echo "${addresses[*]}"
)
export LOCKMUX_BENCH_ADDRS
echo "servers: $LOCKMUX_BENCH_ADDRS ($(redis-server --version | cut -d' ' -f3))"

benchstat=$(command -v benchstat || true)
if [[ -z $benchstat ]]; then
	echo "installing benchstat into $work_dir/bin"
	GOBIN="$work_dir/bin" go install golang.org/x/perf/cmd/benchstat@latest
	benchstat="$work_dir/bin/benchstat"
fi

mkdir -p "$out_dir"
raw="$out_dir/bench-$(date +%Y%m%d-%H%M%S).txt"
bench_flags=(-run '^$' -bench "$pattern" -benchmem -count "$count")
if [[ -n ${BENCH_TIME:-} ]]; then
	bench_flags+=(-benchtime "$BENCH_TIME")
fi

cd "$bench_dir"
{
	echo "machine: $(uname -srm), $(nproc) CPUs"
	echo "redis: $(redis-server --version | cut -d' ' -f3)"
	echo "command: go test ${bench_flags[*]}"
	if [[ -r /proc/loadavg ]]; then
		echo "load-before: $(cut -d' ' -f1-3 /proc/loadavg)"
	fi
} >"$raw"
echo "go test ${bench_flags[*]} (raw output: $raw)"
# A failed benchmark still leaves the others' results to report.
test_status=0
go test "${bench_flags[@]}" | tee -a "$raw" || test_status=$?
# go test can report PASS after a sub-benchmark failed in one of several
# -count runs; the output still says so.
if [[ $test_status -eq 0 ]] && grep -q -- '--- FAIL' "$raw"; then
	test_status=1
fi

echo
echo "==> benchstat"
"$benchstat" "$raw"

echo
echo "==> summary"
go run ./cmd/summary "$raw"

if [[ $test_status -ne 0 ]]; then
	echo >&2
	echo "some benchmarks failed (exit status $test_status); see the output above: their rows have fewer runs or none" >&2
fi
exit "$test_status"
