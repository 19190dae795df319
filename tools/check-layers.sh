#!/bin/sh
# check-layers.sh - enforces DESIGN.md's layering rule (as Tor does with
# .may_include files).  Each layer directory holds a .may_include file with
# one glob per line; every #include in a .c/.h below that directory must
# match one of them.  The word LOCAL allows a quoted header without a slash
# that exists beside the including file.  Prints each violation as FILE:LINE: include and fails.
set -euf
cd "$(dirname "$0")/.."
for rules in $(find . -name .may_include -not -path './build*' | sort); do
	dir=$(dirname "$rules")
	patterns=$(grep -v -e '^#' -e '^[[:space:]]*$' "$rules")
	for f in $(find "$dir" -name '*.[ch]' | sort); do
		grep -n -E '^[[:space:]]*#[[:space:]]*include' "$f" |
		sed -E 's/^([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"].*/\1 \2/' |
		while read -r line inc; do
			allowed=0
			if [ -n "$(echo "$patterns" | grep -x LOCAL)" ] && [ "${inc#*/}" = "$inc" ] &&
			   [ -e "$(dirname "$f")/$inc" ]; then
				allowed=1
			fi
			for p in $patterns; do
				# shellcheck disable=SC2254
				case "$inc" in $p) allowed=1; break ;; esac
			done
			if [ $allowed -eq 0 ]; then
				echo "$f:$line: includes <$inc>, not allowed by $rules"
				echo x >> "${TMPDIR:-/tmp}/weft-layers.$$"
			fi
		done
	done
done
if [ -e "${TMPDIR:-/tmp}/weft-layers.$$" ]; then
	rm -f "${TMPDIR:-/tmp}/weft-layers.$$"
	echo "check-layers: FAILED (see DESIGN.md, 'Layering rule')"
	exit 1
fi
echo "check-layers: ok"
exit 0
