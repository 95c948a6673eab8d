#!/usr/bin/env bash
# Plots of one bench/run.sh run (its results.tsv), with the references of the
# same run drawn as lines:
#   bw.svg   bandwidth (GB/s, best average of the repeats) against message
#            size for ib_write_bw / ib_read_bw / ib_send_bw, each poll mode;
#            memcpy 1 MiB cold and kernel TCP (iperf3) as references;
#   lat.svg  latency (us) against message size, median and p99 of each
#            latency test; the eventfd and spin ping-pong floors and TCP's
#            median (sockperf) as references.
#
# usage: bench/plot.sh RESULTS_DIR [OUT_DIR]   (OUT_DIR defaults to RESULTS_DIR)
#   e.g. bench/plot.sh bench/results/latest docs/img
# Needs gnuplot (Debian's gnuplot-nox; bench/run.sh installs it).
set -u
dir=${1:?usage: bench/plot.sh RESULTS_DIR [OUT_DIR]}
outdir=${2:-$dir}
tsv=$dir/results.tsv
[ -r "$tsv" ] || { echo "bench/plot.sh: no $tsv" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "bench/plot.sh: gnuplot missing (apt-get install gnuplot-nox)" >&2; exit 1; }
mkdir -p "$outdir" || exit 1
tmp=$(mktemp -d /tmp/vrdma-plot.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# best SECTION MODE TEST SIZE METRIC max|min: the best value over the repeats.
best() {
	awk -F'\t' -v s="$1" -v m="$2" -v t="$3" -v z="$4" -v k="$5" -v how="$6" '
		$1 == s && $2 == m && $3 == t && $4 == z && $5 == k && $6 ~ /^[0-9.]+$/ {
			if (n == 0 || (how == "max" && $6 > b) || (how == "min" && $6 < b)) b = $6
			n++
		}
		END { if (n) print b }' "$tsv"
}

# series TEST METRIC max|min SCALE: "size value*SCALE" rows per mode, into
# $tmp/TEST.METRIC.MODE; prints the files written.
series() {
	local t=$1 k=$2 how=$3 scale=$4 m z v f
	for m in $(awk -F'\t' -v t="$t" '$1 == "vrdma" && $3 == t { print $2 }' "$tsv" | sort -u); do
		f=$tmp/$t.$k.$m
		: >"$f"
		for z in $(awk -F'\t' -v t="$t" -v m="$m" -v k="$k" \
			'$1 == "vrdma" && $2 == m && $3 == t && $5 == k { print $4 }' "$tsv" | sort -n -u); do
			v=$(best vrdma "$m" "$t" "$z" "$k" "$how")
			[ -n "$v" ] && echo "$z $(awk -v v="$v" -v s="$scale" 'BEGIN { print v * s }')" >>"$f"
		done
		[ -s "$f" ] && echo "$f"
	done
}

# One perftest "MB/sec" is 2^20 bytes/s; plots use GB/s (10^9).
mib_to_gb=0.001048576
memcpy=$(best ref - memcpy - memcpy_1m_cold_GBps max)
tcp_bps=$(best ref - iperf3 - bps max)
tcp=""
[ -n "$tcp_bps" ] && tcp=$(awk -v b="$tcp_bps" 'BEGIN { print b / 8e9 }')

plots=""
for t in ib_write_bw ib_read_bw ib_send_bw; do
	for f in $(series "$t" avg_MiBps max "$mib_to_gb"); do
		m=${f##*.}
		plots="$plots${plots:+, }'$f' using 1:2 with linespoints title '$t poll-us=$m' noenhanced"
	done
done
if [ -n "$plots" ]; then
	[ -n "$memcpy" ] && plots="$plots, $memcpy with lines dashtype 2 title 'memcpy 1 MiB cold, one core' noenhanced"
	[ -n "$tcp" ] && plots="$plots, $tcp with lines dashtype 3 title 'kernel TCP loopback (iperf3)' noenhanced"
	gnuplot <<EOF || exit 1
set terminal svg size 900,560 dynamic enhanced font 'sans,12'
set output '$outdir/bw.svg'
set title 'vrdma bandwidth between two devices of one daemon (bench/run.sh)'
set xlabel 'message size (bytes)'
set ylabel 'GB/s (10^9 bytes/s)'
set logscale x 2
set format x '2^{%L}'
set key left top
set grid
plot $plots
EOF
	echo "$outdir/bw.svg"
fi

plots=""
for t in ib_write_lat ib_read_lat ib_send_lat; do
	for f in $(series "$t" typical_us min 1); do
		m=${f##*.}
		plots="$plots${plots:+, }'$f' using 1:2 with linespoints title '$t median poll-us=$m' noenhanced"
	done
	for f in $(series "$t" p99_us min 1); do
		m=${f##*.}
		plots="$plots${plots:+, }'$f' using 1:2 with linespoints dashtype 4 title '$t p99 poll-us=$m' noenhanced"
	done
done
if [ -n "$plots" ]; then
	ev=$(best ref - floor_eventfd 64 p50_us min)
	sp=$(best ref - floor_spin 64 p50_us min)
	tp=$(best ref - sockperf 64 p50_us min)
	[ -n "$ev" ] && plots="$plots, $ev with lines dashtype 2 title 'eventfd ping-pong floor' noenhanced"
	[ -n "$sp" ] && plots="$plots, $sp with lines dashtype 3 title 'shared-memory spin floor' noenhanced"
	[ -n "$tp" ] && plots="$plots, $tp with lines dashtype 5 title 'TCP ping-pong median (sockperf)' noenhanced"
	gnuplot <<EOF || exit 1
set terminal svg size 900,560 dynamic enhanced font 'sans,12'
set output '$outdir/lat.svg'
set title 'vrdma one-way latency between two devices of one daemon (bench/run.sh)'
set xlabel 'message size (bytes)'
set ylabel 'microseconds'
set logscale x 2
set logscale y 10
set format x '2^{%L}'
set key left top
set grid
plot $plots
EOF
	echo "$outdir/lat.svg"
fi
