#!/bin/sh
# kb-ai's capture and prompt hooks in POSIX sh: what `kb-ai hooks install` runs for
# SessionEnd, Stop, PreCompact and (with --prompt-hint) each prompt where /bin/sh
# exists, because starting any Python costs more than the whole capture, or the whole
# hint (kb_ai/hooks/run.py is the same hooks in Python, and the fallback).
#
#   sh kb-ai-hook.sh --python PY NAME [--agent claude-code|codex] [--kb DIR]
#
# session-end: finds the knowledge base as the Python hook does (walking up from the
# current directory: a KB, or a .kb-ai marker; else KB_AI_DIR), copies the agent's event
# (standard input, at most 1,000,000 bytes) into one spool record, makes it durable
# (`sync FILE`: one fsync with GNU coreutils), renames it into .kb-ai/spool/new/ (a
# reader never sees half a record), and starts `PY -m kb_ai worker --drain` detached
# when no worker runs (see worker.pid below) and none is starting. It parses no JSON:
# the record is the event followed by one line of ours ({"v":3,...}), and the worker's
# reader (kb_ai/hooks/spool.py) takes the fields from it, or drops a record that holds
# no hook event, as the Python hook would have spooled nothing; empty input spools
# nothing. Each program run costs a fork and an exec, which on a loaded machine waits
# for a CPU: a capture runs three (`head`, `sync`, `mv`), plus `flock` and `setsid`
# only when it has to start a worker.
#
# prompt: see prompt_hint below (one awk run over a precomputed hint file).
#
# Every other hook (session-start prints the snapshot), and whatever this script
# does not handle itself (no KB found from the current directory, a marker it cannot
# read simply, a linked git worktree, a path starting with ~), runs the Python hook. It prints nothing and exits 0, always:
# a hook must never break the agent.

py=python3
if [ "$1" = --python ] && [ $# -ge 2 ]; then
    py=$2
    shift 2
fi

# (KB_AI_SHELL_HOOK: a prompt hook run from here writes the hint file again when stale)
python_hook() {
    command -v "$py" >/dev/null 2>&1 || exit 0
    KB_AI_SHELL_HOOK=1 exec "$py" -P -m kb_ai.hooks "$@"
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
[ -z "$want" ] || python_hook "$@"
case $name in
    session-end | prompt) ;;
    *) python_hook "$@" ;;
esac
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

kb_arg=$kb
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

# prompt: the hint from the hint file kb_ai/hooks/hintfile.py writes, by one awk run
# (kb_ai/hooks/hint.awk), when that file is there and newer than every file it was
# made from; otherwise, and for a prompt awk cannot answer as the Python hint would
# (exit 3: it then prints the event back), the Python hook, which also writes the
# hint file again. Any other fault of awk: no hint.
prompt_hint() {
    hint=$kb/.kb-ai/hint
    gen=
    read -r gen 2>/dev/null <"$hint/current"
    case $gen in '' | */* | .*) python_hook "$@" ;; esac
    gen=$hint/$gen
    [ -f "$gen/meta" ] && [ -f "$gen/sources" ] || python_hook "$@"
    stale=
    while IFS= read -r src <&3; do
        if [ "$src" -nt "$gen/meta" ]; then
            stale=1
            break
        fi
    done 3<"$gen/sources"
    [ -z "$stale" ] || python_hook "$@"
    case $0 in */*) script_dir=${0%/*} ;; *) script_dir=. ;; esac
    cwd_must=$PWD
    [ -z "$kb_arg" ] || cwd_must=''  # with --kb the event's cwd finds nothing
    awk=awk
    if command -v mawk >/dev/null 2>&1; then awk=mawk; fi  # starts in half gawk's time
    out=$(KB_AI_HINT=$gen KB_AI_CWD=$cwd_must LC_ALL=C "$awk" -f "$script_dir/hint.awk" 2>/dev/null)
    case $? in
        0) [ -z "$out" ] || printf '%s\n' "$out" ;;
        3) python_hook "$@" <<EOF
$out
EOF
            ;;
        127) python_hook "$@" ;;  # no awk: the event is still unread
    esac
    exit 0
}
[ "$name" != prompt ] || prompt_hint "$@"

state=$kb/.kb-ai
spool=$state/spool
[ -d "$spool/new" ] && [ -d "$spool/tmp" ] || mkdir -p "$spool/tmp" "$spool/new" "$spool/cur" 2>/dev/null

# The record is named sh-PID-HEX8.json: HEX8 from a random UUID the kernel hands out
# (read by the shell itself), or where there is none the last 8 digits of `date`'s
# nanoseconds. It holds no time: the worker's reader renames it, as the Python hook
# names a record, after the file's modification time (the moment this hook wrote it).
hex=
read -r hex 2>/dev/null </proc/sys/kernel/random/uuid
hex=${hex%%-*}
case $hex in
    ???????? ) ;;
    *)
        hex=$(date +%s%N 2>/dev/null)
        hex=00000000$hex
        hex=${hex#"${hex%????????}"}
        case $hex in *[!0-9]*) hex=00000000 ;; esac
        ;;
esac
record=sh-$$-$hex.json
here=$PWD
case $here in *'"'* | *\\* | *[[:cntrl:]]*) here='' ;; esac  # the event's cwd comes first

tmp=$spool/tmp/$record
# The record is the agent's event as it came, then one line of our own:
#   EVENT \n {"v":3,"agent":"codex","hook_cwd":"/dir"} \n
# so that an empty event is told by the file's size alone (`[ -s ]`, a builtin).
# Each write a plain command: a failed redirection must not end this shell with an error.
head -c 1000000 2>/dev/null >"$tmp" || {
    rm -f "$tmp"
    exit 0
}
if ! [ -s "$tmp" ]; then
    rm -f "$tmp"  # no event: the Python hook spools nothing, and no worker is started
    exit 0
fi
if ! printf '\n{"v":3,"agent":"%s","hook_cwd":"%s"}\n' "$agent" "$here" 2>/dev/null >>"$tmp"; then
    rm -f "$tmp"  # no room
    exit 0
fi
# one fsync of the record (GNU coreutils >= 8.24); a sync that takes no file flushes all
sync "$tmp" 2>/dev/null || sync
mv -f "$tmp" "$spool/new/$record" 2>/dev/null || {
    rm -f "$tmp"
    exit 0
}

# A running worker names itself in worker.pid: "PID START", START being field 22 of
# /proc/PID/stat (when it started), so a pid since reused by another process does not
# count. Read with builtins: when it names a live process, no program is run at all.
if read -r wpid wstart 2>/dev/null <"$state/worker.pid"; then
    case $wpid in
        '' | *[!0-9]*) ;;
        *)
            if read -r wstat 2>/dev/null <"/proc/$wpid/stat"; then
                set -f
                # shellcheck disable=SC2086 # split into the fields that follow "(name) "
                set -- ${wstat##*') '}
                set +f
                if [ $# -ge 20 ] && [ "$1" != Z ] && [ "${20}" = "$wstart" ]; then
                    exit 0
                fi
            fi
            ;;
    esac
fi
# otherwise (none named, or this system has no /proc): a worker holds worker.lock
# (shared) while it runs; when the lock is free, none does
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
