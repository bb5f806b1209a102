# The step runner `.ci/run` sources: every step runs (or is skipped, saying why), each is reported as it ends, and
# the summary at the end lists them all and fails when one failed. Bash; tests/unit/test_ci.py tries it.
#
#   step NAME [--needs OTHER]... -- COMMAND [ARG]...
#       runs COMMAND (a program or a shell function) in this shell's folder. It passed when COMMAND exits 0; it
#       is skipped when COMMAND exits 77 (SKIPPED, automake's convention) after `skipped_because "why"`, or when a
#       step it needs did not pass; otherwise it failed. The next step runs either way.
#   summary
#       prints one line per step (passed, failed with its exit status, or skipped and why) and returns 1 if any
#       step failed, else 0.

SKIPPED=77
_ci_names=()
_ci_states=()
_ci_notes=()
_ci_why=""

skipped_because() {
  _ci_why="$1"
}

_ci_state_of() {
  local i
  for i in "${!_ci_names[@]}"; do
    if [ "${_ci_names[$i]}" = "$1" ]; then
      echo "${_ci_states[$i]}"
      return
    fi
  done
  echo "missing"
}

_ci_record() {
  _ci_names+=("$1")
  _ci_states+=("$2")
  _ci_notes+=("$3")
  if [ -n "$3" ]; then
    printf '==> %s: %s (%s)\n' "$1" "$2" "$3"
  else
    printf '==> %s: %s\n' "$1" "$2"
  fi
}

step() {
  local name="$1" needs=() state status
  shift
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
    if [ "$1" = "--needs" ]; then
      needs+=("$2")
      shift 2
    else
      echo "step $name: unknown option $1" >&2
      _ci_record "$name" failed "bad step line"
      return 0
    fi
  done
  shift  # the --
  local need
  for need in ${needs[@]+"${needs[@]}"}; do
    state="$(_ci_state_of "$need")"
    if [ "$state" != passed ]; then
      _ci_record "$name" skipped "needs $need, which $( [ "$state" = missing ] && echo 'did not run' || echo "$state")"
      return 0
    fi
  done
  printf '\n==> %s: %s\n' "$name" "$*"
  _ci_why=""
  "$@"
  status=$?
  if [ "$status" -eq 0 ]; then
    _ci_record "$name" passed ""
  elif [ "$status" -eq "$SKIPPED" ]; then
    _ci_record "$name" skipped "${_ci_why:-no reason given}"
  else
    _ci_record "$name" failed "exit status $status"
  fi
  return 0
}

summary() {
  local i failed=0 line
  printf '\nCI steps:\n'
  for i in "${!_ci_names[@]}"; do
    line="$(printf '  %-8s %s' "${_ci_states[$i]}" "${_ci_names[$i]}")"
    [ -n "${_ci_notes[$i]}" ] && line="$line: ${_ci_notes[$i]}"
    echo "$line"
    [ "${_ci_states[$i]}" = failed ] && failed=$((failed + 1))
  done
  if [ "$failed" -gt 0 ]; then
    printf '%d of %d steps failed.\n' "$failed" "${#_ci_names[@]}"
    return 1
  fi
  printf 'No step failed.\n'
  return 0
}
