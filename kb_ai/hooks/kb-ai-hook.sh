#!/bin/sh
# kb-ai's capture hook in POSIX sh: what `kb-ai hooks install` runs for SessionEnd, Stop
# and PreCompact where /bin/sh exists, because starting any Python costs more than the
# whole capture (kb_ai/hooks/run.py is the same hook in Python, and the fallback).
#
#   sh kb-ai-hook.sh --python PY NAME [--agent claude-code|codex] [--kb DIR]
#
# session-end: finds the knowledge base as the Python hook does (walking up from the
# current directory: a KB, or a .kb-ai marker; else KB_AI_DIR), copies the agent's event
# (standard input, at most 1,000,000 bytes) into one spool record, makes it durable
# (`sync FILE`: one fsync with GNU coreutils), renames it into .kb-ai/spool/new/ (a
# reader never sees half a record), and starts `PY -m kb_ai worker --drain` detached
# when no worker holds the KB's worker lock and none is starting. It parses no JSON: the
# record wraps the event ({"v":2,...,"raw":EVENT}) and the worker's reader
# (kb_ai/hooks/spool.py) takes the fields from it, or drops a record that holds no hook
# event, as the Python hook would have spooled nothing.
#
# Every other hook (session-start prints the snapshot, prompt), and whatever this script
# does not handle itself (no KB found from the current directory, a marker it cannot
# read simply, a linked git worktree, a path starting with ~), runs the Python hook. It prints nothing and exits 0, always:
# a hook must never break the agent.

py=python3
if [ "$1" = --python ] && [ $# -ge 2 ]; then
    py=$2
    shift 2
fi

python_hook() {
    command -v "$py" >/dev/null 2>&1 || exit 0
    exec "$py" -P -m kb_ai.hooks "$@"
}

name='' agent=claude-code kb='' want=''
for arg do
    case $want in
        agent) agent=$arg; want=; continue ;;
        kb) kb=$arg; want=; continue ;;
    esac
    case $arg in
        --agent) want=agent ;;
        --agent=*) agent=${arg#--agent=} ;;
        --kb) want=kb ;;
        --kb=*) kb=${arg#--kb=} ;;
        -*) python_hook "$@" ;;
        *) if [ -z "$name" ]; then name=$arg; else python_hook "$@"; fi ;;
    esac
done
if [ -n "$want" ] || [ "$name" != session-end ]; then
    python_hook "$@"
fi
case $agent in
    claude-code | codex) ;;
    *) python_hook "$@" ;;
esac

is_kb() {
    [ -f "$1/kb-ai.toml" ] && [ -d "$1/.kb-ai" ]
}

# A marker as `hooks install` writes it: comments and one line `kb = "PATH"`. Sets kb;
# fails for anything else (the Python hook reads it as TOML).
read_marker() {
    [ -r "$1/.kb-ai" ] || return 1
    target=
    while IFS= read -r line || [ -n "$line" ]; do
        case $line in
            '' | '#'*) ;;
            'kb = "'*'"')
                [ -z "$target" ] || return 1
                target=${line#'kb = "'}
                target=${target%'"'}
                case $target in '' | *'"'* | *\\* | '~'*) return 1 ;; esac
                ;;
            *) return 1 ;;
        esac
    done <"$1/.kb-ai"
    [ -n "$target" ] || return 1
    case $target in
        /*) kb=$target ;;
        *) kb=$1/$target ;;
    esac
}

no_kb() {
    [ -t 0 ] || head -c 1000000 >/dev/null 2>&1  # read the event as the Python hook does
    exit 0
}
[ ! -t 0 ] || no_kb  # a terminal, not an agent: no event to read

if [ -n "$kb" ]; then
    case $kb in '~'*) python_hook "$@" ;; esac
    is_kb "$kb" || no_kb
else
    cd -P . 2>/dev/null || python_hook "$@"
    d=$PWD
    while :; do
        if is_kb "$d"; then
            kb=$d
            break
        fi
        if [ -f "$d/.kb-ai" ]; then
            read_marker "$d" || python_hook "$@"
            is_kb "$kb" || kb=
            break
        fi
        if [ -e "$d/.git" ]; then
            [ -d "$d/.git" ] || python_hook "$@"  # a linked worktree: its main repository's KB
            break
        fi
        [ "$d" != / ] && [ -n "$d" ] || break
        d=${d%/*}
        [ -n "$d" ] || d=/
    done
    if [ -z "$kb" ] && [ -n "$KB_AI_DIR" ]; then
        case $KB_AI_DIR in '~'*) python_hook "$@" ;; esac
        if is_kb "$KB_AI_DIR"; then kb=$KB_AI_DIR; fi
    fi
    # none from here: the Python hook looks from the session's own directory (the
    # event's cwd), in case the agent runs its hooks from elsewhere
    [ -n "$kb" ] || python_hook "$@"
fi

state=$kb/.kb-ai
spool=$state/spool
[ -d "$spool/new" ] && [ -d "$spool/tmp" ] || mkdir -p "$spool/tmp" "$spool/new" "$spool/cur" 2>/dev/null

# the record's name, as the Python hook names it: nanoseconds (20 digits), pid, 8 hex
# digits (here the nanoseconds' last 8 decimal digits: no process spent on randomness)
ns=$(date +%s%N 2>/dev/null)
case $ns in '' | *[!0-9]*) ns=$(date +%s)000000000 ;; esac
case ${#ns} in
    19) stamp=0$ns ;;
    *) stamp=$(printf '%020d' "$ns") ;;
esac
sec=${ns%?????????}
record=$stamp-$$-${ns#"${ns%????????}"}.json
here=$PWD
case $here in *'"'* | *\\* | *[[:cntrl:]]*) here='' ;; esac  # the event's cwd comes first

tmp=$spool/tmp/$record
# each write a plain command: a failed redirection must not end this shell with an error
printf '{"v":2,"agent":"%s","time":%s.%s,"hook_cwd":"%s","raw":' \
    "$agent" "$sec" "${ns#"$sec"}" "$here" >"$tmp" 2>/dev/null || exit 0
if ! head -c 1000000 >>"$tmp" 2>/dev/null || ! printf '}\n' >>"$tmp" 2>/dev/null \
    || ! LC_ALL=C grep -q '"transcript_path"' "$tmp" 2>/dev/null; then
    rm -f "$tmp"  # no event (empty, not one), or no room: the Python hook spools nothing
    exit 0
fi
# one fsync of the record (GNU coreutils >= 8.24); a sync that takes no file flushes all
sync "$tmp" 2>/dev/null || sync
mv -f "$tmp" "$spool/new/$record" 2>/dev/null || {
    rm -f "$tmp"
    exit 0
}

# a worker holds worker.lock (shared) while it runs: when the lock is free, none does
if command -v flock >/dev/null 2>&1; then
    flock -xn 9 9>>"$state/worker.lock" 2>/dev/null || exit 0
fi
# the first hook to create worker.starting starts the worker (which removes it); one
# left over a minute by a worker that died starting is replaced
starting=$state/worker.starting
set -C
if ! true 2>/dev/null >"$starting"; then
    [ -n "$(find "$starting" -mmin +1 2>/dev/null)" ] || exit 0
    rm -f "$starting"
    true 2>/dev/null >"$starting" || exit 0
fi
set +C
log=$state/worker.log
if command -v setsid >/dev/null 2>&1; then
    setsid "$py" -P -m kb_ai --kb "$kb" worker --drain </dev/null >>"$log" 2>&1 &
else
    nohup "$py" -P -m kb_ai --kb "$kb" worker --drain </dev/null >>"$log" 2>&1 &
fi
exit 0
