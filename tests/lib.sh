# Shell helpers for integration tests (source it). Each check prints
# "ok NAME" / "not ok NAME" / "skip NAME: why" like tests/harness.h.
#
# VRDMA_BUILD is the build tree under test (set by tests/run.sh).
: "${VRDMA_BUILD:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build}"
VRDMA_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export VRDMA_BUILD VRDMA_TOP
T_PROG=$(basename "$0" .sh)
T_FAILED=0
T_TMP=$(mktemp -d "/tmp/vrdma-${T_PROG}.XXXXXX")
T_PIDS=()

# The daemon under test runs as in production: unprivileged (--user nobody
# when the tests run as root) under its seccomp filter (on by default).
T_DAEMON_PRIV=()
# Like a run directory of the daemon's user, T_TMP belongs to it, so that
# the daemon removes its sockets and pid file on exit.
if [ "$(id -u)" -eq 0 ] && getent passwd nobody >/dev/null; then
	T_DAEMON_PRIV=(--user nobody)
	chown nobody "$T_TMP"
fi

ok()      { echo "ok $T_PROG.$1"; }
not_ok()  { echo "not ok $T_PROG.$1"; shift; [ $# -gt 0 ] && echo "#   $*"; T_FAILED=1; }
skip()    { echo "skip $T_PROG.$1: $2"; }
# need NAME ITEM...: each ITEM is a path built by make (it starts with /) or
# a command installed by "scripts/deps.sh test". When one is missing this is
# "not ok NAME" saying what and how to get it (a missing tool is a failure,
# never a skip), and need returns 1.
need() {
	local n=$1 i miss=""
	shift
	for i in "$@"; do
		case "$i" in
		/*) [ -e "$i" ] || miss+=" $i (not built: run make)" ;;
		*) command -v "$i" >/dev/null ||
			miss+=" $i (not installed: run scripts/deps.sh test)" ;;
		esac
	done
	[ -z "$miss" ] && return 0
	not_ok "$n" "missing:$miss"
	return 1
}
# check NAME CMD...: ok if CMD succeeds.
check()   { local n=$1; shift; if "$@"; then ok "$n"; else not_ok "$n" "command failed: $*"; fi; }

# bg CMD...: start a background process, remembered for cleanup.
bg() { "$@" & T_PIDS+=($!); }

t_cleanup() {
	local p
	for p in "${T_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${T_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	# VRDMA_KEEP_TMP=1 keeps the logs of a run for a post-mortem
	if [ -n "${VRDMA_KEEP_TMP:-}" ]; then echo "# kept $T_TMP"; else rm -rf "$T_TMP"; fi
}
trap t_cleanup EXIT

# wait_for_file PATH [TRIES]: wait until PATH exists (an event, not a timing
# assumption: the loop polls for the condition and gives up after TRIES*0.05s).
wait_for_file() {
	local i n=${2:-400}
	for ((i = 0; i < n; i++)); do [ -e "$1" ] && return 0; sleep 0.05; done
	return 1
}

# wait_for CMD...: poll a condition (up to 20 s).
wait_for() {
	local i
	for ((i = 0; i < 400; i++)); do "$@" && return 0; sleep 0.05; done
	return 1
}

t_done() { exit $T_FAILED; }
