#!/bin/sh
# Runs `tilejit run ARGS...` and checks its exit code and last line: 0 and "all
# checks passed", or, for a planted defect, 1 and "some checks FAILED" (a crash
# or any other code fails the test). Usage: run_exit_code.sh TILEJIT WANT ARGS...
set -u
tilejit=$1 want=$2
shift 2
log=$(mktemp)
"$tilejit" run "$@" >"$log" 2>&1
rc=$?
cat "$log"
last=$(tail -n 1 "$log")
rm -f "$log"
case "$want" in
0) [ "$rc" -eq 0 ] && [ "$last" = "all checks passed" ] && exit 0 ;;
1) [ "$rc" -eq 1 ] && [ "$last" = "some checks FAILED" ] && exit 0 ;;
esac
echo "run_exit_code.sh: tilejit run $* exited $rc ('$last'), expected $want" >&2
exit 1
