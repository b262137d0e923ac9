# kb-ai's prompt hint in POSIX awk, run by kb_ai/hooks/kb-ai-hook.sh under LC_ALL=C:
#
#   KB_AI_HINT=DIR KB_AI_CWD=PWD-or-empty LC_ALL=C awk -f hint.awk  <EVENT
#
# It answers as kb_ai/hooks/hint.py does, from the hint file kb_ai/hooks/hintfile.py
# writes (DIR: its meta, docs and t/ buckets): the prompt of the agent's JSON event, cut
# into words as hint.py cuts it, each word stemmed as SQLite's FTS5 porter tokenizer
# stems it, the articles scored by summing the bm25 parts the hint file holds for those
# stems (the same numbers SQLite would add, in the same order), the best of the project
# and then of each `also` knowledge base, named in one line of at most max_bytes.
# Exit 0: its output is the answer (maybe none). Exit 3: it cannot answer as hint.py
# would (a character beyond ASCII, JSON it does not read, a cwd other than the shell's),
# and its output is the event as it came, for the Python hook. Any other exit: a fault
# (the shell prints nothing). The wording, bounds and stop words come from meta.

function fallback() {
    fallen = 1
    printf "%s", event
    exit 3
}

function ws() {
    if (match(s, /^[ \t\r\n]+/)) s = substr(s, RLENGTH + 1)
}

# A JSON string at the start of s, decoded, each escape to one character (an escaped
# backslash, a control character or a \u escape of anything but a letter or digit to a
# separator: only the words matter); s then starts after it.
function jstring(   raw, out, c, code) {
    if (!match(s, /^"([^"\\]|\\.)*"/)) fallback()
    raw = substr(s, 2, RLENGTH - 2)
    s = substr(s, RLENGTH + 1)
    if (raw ~ /[^ -~]/) fallback()  # beyond ASCII, or a raw control character
    gsub(/\\\\/, "\001", raw)  # backslashes pair from the left, as the escapes do
    if (raw ~ /\\u/) {
        out = ""
        while (match(raw, /\\u/)) {
            out = out substr(raw, 1, RSTART - 1)
            raw = substr(raw, RSTART + 2)
            if (!match(raw, /^[0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F]/)) fallback()
            code = hexval(substr(raw, 1, 4))
            raw = substr(raw, 5)
            if (code >= 128) fallback()
            c = sprintf("%c", code)
            out = out ((c ~ /^[A-Za-z0-9]$/) ? c : "\001")
        }
        raw = out raw
    }
    gsub(/\\"/, "\"", raw)
    gsub(/\\\//, "/", raw)
    gsub(/\\[bfnrt]/, " ", raw)
    if (raw ~ /\\/) fallback()  # an escape JSON does not have
    return raw
}

function hexval(h,   i, v) {
    v = 0
    for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", tolower(substr(h, i, 1))) - 1
    return v
}

# Any JSON value at the start of s, checked and skipped; a string's text is returned.
function jvalue(   c, done) {
    ws()
    c = substr(s, 1, 1)
    if (c == "\"") return jstring()
    if (c == "{") {
        s = substr(s, 2); ws()
        if (substr(s, 1, 1) == "}") { s = substr(s, 2); return "" }
        for (done = 0; !done; ) {
            ws()
            if (substr(s, 1, 1) != "\"") fallback()
            jstring(); ws()
            if (substr(s, 1, 1) != ":") fallback()
            s = substr(s, 2)
            jvalue(); ws()
            c = substr(s, 1, 1); s = substr(s, 2)
            if (c == "}") done = 1
            else if (c != ",") fallback()
        }
        return ""
    }
    if (c == "[") {
        s = substr(s, 2); ws()
        if (substr(s, 1, 1) == "]") { s = substr(s, 2); return "" }
        for (done = 0; !done; ) {
            jvalue(); ws()
            c = substr(s, 1, 1); s = substr(s, 2)
            if (c == "]") done = 1
            else if (c != ",") fallback()
        }
        return ""
    }
    if (match(s, /^(true|false|null|-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?)/)) {
        s = substr(s, RLENGTH + 1)
        return ""
    }
    fallback()
}

# The porter stemmer of SQLite's FTS5 (fts5_tokenize.c), step by step.
function isv(c, yvowel) {
    return index("aeiou", c) > 0 || (yvowel && c == "y")
}

# chars consumed by one vowel run then one consonant (0: none such in z's first n)
function gobble(z, n, prevcons,   i, cons) {
    cons = prevcons
    for (i = 1; i <= n; i++) { cons = !isv(substr(z, i, 1), cons); if (!cons) break }
    for (i++; i <= n; i++) { cons = !isv(substr(z, i, 1), cons); if (cons) return i }
    return 0
}

function mgt0(z, n) { return gobble(z, n, 0) > 0 }

function mgt1(z, n,   k) {
    k = gobble(z, n, 0)
    return k > 0 && gobble(substr(z, k + 1), n - k, 1) > 0
}

function meq1(z, n,   k) {
    k = gobble(z, n, 0)
    return k > 0 && gobble(substr(z, k + 1), n - k, 1) == 0
}

function ostar(z, n,   i, cons, mask) {
    if (index("wxy", substr(z, n, 1)) > 0) return 0
    cons = 0; mask = 0
    for (i = 1; i <= n; i++) { cons = !isv(substr(z, i, 1), cons); mask = (mask * 2 + cons) % 8 }
    return mask == 5
}

function hasvowel(z, n,   i) {
    for (i = 1; i <= n; i++) if (isv(substr(z, i, 1), i > 1)) return 1
    return 0
}

function cond(name, z, n) {
    if (name == "m0") return mgt0(z, n)
    if (name == "m1") return mgt1(z, n)
    if (name == "st") return index("st", substr(z, n, 1)) > 0 && mgt1(z, n)
    if (name == "v") return hasvowel(z, n)
    return 1
}

# Apply the first rule of list (suffix:replacement:condition ...) whose suffix ends
# z[1..n] (and is shorter than it), if its condition holds of the rest. Sets zz and nn;
# returns 1 if a rule was applied.
function rule(list, z, n,   k, i, r, f, m) {
    zz = z; nn = n
    k = split(list, r, " ")
    for (i = 1; i <= k; i++) {
        split(r[i], f, ":")
        m = length(f[1])
        if (n > m && substr(z, n - m + 1, m) == f[1]) {
            if (!cond(f[3], z, n - m)) return 0
            zz = substr(z, 1, n - m) f[2]; nn = n - m + length(f[2])
            return 1
        }
    }
    return 0
}

function stem(w,   z, n, c, applied) {
    n = length(w)
    if (n > 64 || n < 3) return w
    z = w
    if (substr(z, n, 1) == "s") {
        if (substr(z, n - 1, 1) == "e") {
            if ((n > 4 && substr(z, n - 3, 2) == "ss") || (n > 3 && substr(z, n - 2, 1) == "i")) n -= 2
            else n -= 1
        } else if (substr(z, n - 1, 1) != "s") n -= 1
        z = substr(z, 1, n)
    }
    applied = 0
    if (n > 3 && substr(z, n - 2) == "eed") {
        if (mgt0(z, n - 3)) { z = substr(z, 1, n - 1); n-- }
    } else if (rule(STEP1B, z, n)) { z = zz; n = nn; applied = 1 }
    if (applied) {
        if (rule(STEP1B2, z, n)) { z = zz; n = nn }
        else {
            c = substr(z, n, 1)
            if (!isv(c, 0) && c != "l" && c != "s" && c != "z" && c == substr(z, n - 1, 1)) {
                n--; z = substr(z, 1, n)
            } else if (meq1(z, n) && ostar(z, n)) { z = z "e"; n++ }
        }
    }
    if (substr(z, n, 1) == "y" && hasvowel(z, n - 1)) z = substr(z, 1, n - 1) "i"
    if (rule(STEP2, z, n)) { z = zz; n = nn }
    if (rule(STEP3, z, n)) { z = zz; n = nn }
    if (rule(STEP4, z, n)) { z = zz; n = nn }
    if (substr(z, n, 1) == "e" && (mgt1(z, n - 1) || (meq1(z, n - 1) && !ostar(z, n - 1)))) {
        n--; z = substr(z, 1, n)
    }
    if (n > 1 && substr(z, n - 1, 2) == "ll" && mgt1(z, n - 1)) { n--; z = substr(z, 1, n) }
    return z
}

function readmeta(   line, f, k) {
    while ((getline line < (gen "/meta")) > 0) {
        k = index(line, "\t")
        meta[substr(line, 1, k - 1)] = substr(line, k + 1)
    }
    close(gen "/meta")
    if (!("head" in meta)) exit 2
    split(meta["stop"], f, " ")
    for (k in f) stop[f[k]] = 1
    nscopes = split(meta["limits"], limit, " ")
}

BEGIN {
    STEP1B = "ed::v ing::v"
    STEP1B2 = "at:ate: bl:ble: iz:ize:"
    STEP2 = "ational:ate:m0 tional:tion:m0 enci:ence:m0 anci:ance:m0 izer:ize:m0 logi:log:m0 " \
        "bli:ble:m0 alli:al:m0 entli:ent:m0 eli:e:m0 ousli:ous:m0 ization:ize:m0 ation:ate:m0 " \
        "ator:ate:m0 alism:al:m0 iveness:ive:m0 fulness:ful:m0 ousness:ous:m0 aliti:al:m0 " \
        "iviti:ive:m0 biliti:ble:m0"
    STEP3 = "ical:ic:m0 ness::m0 icate:ic:m0 iciti:ic:m0 ful::m0 ative::m0 alize:al:m0"
    STEP4 = "al::m1 ance::m1 ence::m1 er::m1 ic::m1 able::m1 ible::m1 ant::m1 ement::m1 " \
        "ment::m1 ent::m1 ion::st ou::m1 ism::m1 ate::m1 iti::m1 ous::m1 ive::m1 ize::m1"
    event = ""
    size = 0
    gen = ENVIRON["KB_AI_HINT"]
    cwd_must = ENVIRON["KB_AI_CWD"]
}

{
    event = (NR == 1) ? $0 : event "\n" $0
    size += length($0) + 1
    # past 1 MB: Python's hook answers (it reads at most 1 MB of an event); the rest is
    # read and dropped, never held
    if (size > 1000000) { while ((getline) > 0) ; fallback() }
}

END {
    if (fallen) exit 3
    if (stem_only) {  # tests: the stems of the words of standard input, one a line
        n = split(event, w, "\n")
        for (i = 1; i <= n; i++) if (w[i] != "") print stem(w[i])
        exit 0
    }
    s = event
    ws()
    if (substr(s, 1, 1) != "{") fallback()
    prompt = ""; has_prompt = 0; cwd = ""; has_cwd = 0
    s = substr(s, 2); ws()
    if (substr(s, 1, 1) == "}") s = substr(s, 2)
    else for (done = 0; !done; ) {
        ws()
        if (substr(s, 1, 1) != "\"") fallback()
        key = jstring(); ws()
        if (substr(s, 1, 1) != ":") fallback()
        s = substr(s, 2); ws()
        is_string = substr(s, 1, 1) == "\""
        value = jvalue()
        if (key == "prompt") { prompt = value; has_prompt = is_string }
        if (key == "cwd") { cwd = value; has_cwd = is_string }
        ws()
        c = substr(s, 1, 1); s = substr(s, 2)
        if (c == "}") done = 1
        else if (c != ",") fallback()
    }
    ws()
    if (s != "") fallback()
    # the Python hook looks for the knowledge base from the event's cwd: answer only
    # when that is where the shell looked
    if (cwd_must != "" && has_cwd && cwd != cwd_must) fallback()
    if (!has_prompt) exit 0
    readmeta()
    text = tolower(substr(prompt, 1, meta["prompt_chars"] + 0))
    nt = 0
    while (nt < meta["max_terms"] + 0 && match(text, /[a-z0-9]+/)) {
        word = substr(text, RSTART, RLENGTH)
        text = substr(text, RSTART + RLENGTH)
        sub(/^[0-9]+/, "", word)
        if (length(word) < 3 || (word in stop) || (word in seen)) continue
        seen[word] = 1
        st[++nt] = stem(word)
        wanted[st[nt]] = 1
        bucket[substr(st[nt], 1, 2)] = 1
    }
    if (nt == 0) exit 0
    for (b in bucket) {
        file = gen "/t/" b
        while ((getline line < file) > 0) {
            split(line, f, "\t")
            if (!(f[1] in wanted)) continue
            k = ++count[f[1]]
            part_doc[f[1], k] = f[2] SUBSEP f[3]
            part_whole[f[1], k] = f[4] + 0
            part_head[f[1], k] = f[5] + 0
        }
        close(file)
    }
    for (i = 1; i <= nt; i++)  # in the prompt's order, as SQLite adds them
        for (k = 1; k <= count[st[i]]; k++) {
            d = part_doc[st[i], k]
            whole[d] += part_whole[st[i], k]
            head[d] += part_head[st[i], k]
        }
    for (d in whole) {
        split(d, f, SUBSEP)
        score[d] = whole[d] + head[d]
        members[f[1]] = members[f[1]] " " f[2]
    }
    for (sc = 0; sc < nscopes; sc++) {
        n = split(members[sc], ids, " ")
        for (r = 1; r <= limit[sc + 1] && r <= n; r++) {
            best = ""
            for (i = 1; i <= n; i++) {
                d = sc SUBSEP ids[i]
                if (d in taken) continue
                if (best == "" || score[d] > score[best] || (score[d] == score[best] && ids[i] + 0 < bestid)) {
                    best = d; bestid = ids[i] + 0
                }
            }
            taken[best] = 1
            rank[sc, r] = best
            ranks[sc] = r
        }
    }
    while ((getline line < (gen "/docs")) > 0) {
        split(line, f, "\t")
        d = f[1] SUBSEP f[2]
        if ((d in taken) && f[3] == "1") item[d] = substr(line, length(f[1] f[2] f[3]) + 4)
    }
    close(gen "/docs")
    shown = ""; pages = 0
    for (sc = 0; sc < nscopes && pages < meta["max_pages"] + 0; sc++)
        for (r = 1; r <= ranks[sc] && pages < meta["max_pages"] + 0; r++) {
            d = rank[sc, r]
            if (!(d in item)) continue
            pages++
            next_shown = (shown == "") ? item[d] : shown "; " item[d]
            if (length(meta["head"] next_shown meta["tail"]) > meta["max_bytes"] + 0) {
                pages = meta["max_pages"] + 0
                break
            }
            shown = next_shown
        }
    if (shown != "") print meta["head"] shown meta["tail"]
    exit 0
}
