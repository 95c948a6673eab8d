# shellcheck shell=bash disable=SC2034
# Helpers of the bench scripts that run two builds alternately (sourced;
# they read $top, the tree the script belongs to, and set trees).

# bench_trees TOP [BASE]: trees=(BASE TOP), or (TOP) without BASE
bench_trees() {
	trees=("$1")
	[ -n "${2:-}" ] && trees=("$2" "$1")
	return 0
}

# bench_tag TREE: "new" for this tree ($top), "base" for the other
bench_tag() { [ "$1" = "${top:?}" ] && echo new || echo base; }

# bench_median: the median of the numbers on stdin ("-" for none)
bench_median() {
	grep -v '^-*$' | sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bench_range: "median (min-max)" of the numbers on stdin ("-" for none)
bench_range() {
	grep -v '^-*$' | sort -g | awk '{ v[NR] = $1 } END {
		if (!NR) { print "-"; exit }
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%g (%g-%g)\n", m, v[1], v[NR] }'
}
