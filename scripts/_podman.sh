# Shared by scripts/docker-smoke and scripts/scaled-smoke: podman ready to run, the base
# images made where no registry answers, kb-ai's image built. The caller defines say,
# fail, unable (a failure of the machine, not of kb-ai: skipped with --or-skip) and WORK
# (a scratch directory it removes).
#
# Root and Debian's apt are needed to install podman, runc and debootstrap when missing
# (see ../shared/notes/containers.md for why runc and not crun). With no registry
# reachable, the base images are stand-ins made on a debootstrap root file system.

BASE=docker.io/library/python:3.11-slim-bookworm
DEBIAN=docker.io/library/debian:bookworm-slim
# The image both smokes run, kept: its layers are the next build's cache. Built with the
# postgres extra, which the scaled setup needs (a 3 MB wheel, no compile).
IMAGE="localhost/kb-ai:smoke"
IMAGE_EXTRAS="mcp,postgres"

# apt_install PACKAGE...: as root, from Debian's packages, or `unable`.
apt_install() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    unable "missing $*, and no root with apt-get to install them"
  fi
  say "installing $* (apt-get, ~1 min)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "$@"; } >"$WORK/apt.log" 2>&1 ||
    { cat "$WORK/apt.log" >&2; unable "apt-get could not install $*"; }
}

# podman_ready [TOOL:PACKAGE...]: podman with runc works here, with these tools too.
podman_ready() {
  local need=() tool
  for tool in podman:podman runc:runc debootstrap:debootstrap catatonit:catatonit \
    iptables:iptables /usr/lib/cni/bridge:containernetworking-plugins curl:curl "$@"; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || need+=("${tool#*:}")
  done
  [ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"
  # crun (podman's default) cannot set its limits here; runc with capped limits works.
  if [ ! -f /etc/containers/containers.conf ] && [ "$(id -u)" = 0 ]; then
    cat >/etc/containers/containers.conf <<'EOF'
# Written by kb-ai's scripts/_podman.sh: crun cannot raise RLIMIT_NOFILE on this machine.
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
EOF
  fi
  podman info >/dev/null 2>"$WORK/info.log" || { cat "$WORK/info.log" >&2; unable "podman does not work here"; }
}

# The first Debian mirror apt uses here (debootstrap takes the same).
mirror() {
  local uri
  uri=$(grep -hoE '^(URIs:|deb) +(\[[^]]*\] +)?https?://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
    grep -oE 'https?://[^ ]+' | grep -v security | head -1)
  echo "${uri:-http://deb.debian.org/debian}"
}

# pulled IMAGE: true when the image is here or a registry gave it (60 s at most; after
# one registry failed to answer, no other is asked).
NO_REGISTRY=0
pulled() {
  podman image exists "$1" && return 0
  [ "$NO_REGISTRY" = 0 ] || return 1
  if timeout 60 podman pull -q "$1" >/dev/null 2>&1; then
    say "pulled $1"
    return 0
  fi
  NO_REGISTRY=1
  return 1
}

# debian_image: $DEBIAN, pulled or made with debootstrap (~1 min, kept).
debian_image() {
  pulled "$DEBIAN" && return 0
  [ "$(id -u)" = 0 ] || unable "debootstrap needs root"
  say "no registry answered: making $DEBIAN with debootstrap (~1 min)"
  local rootfs="$WORK/rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" "$(mirror)" >"$WORK/debootstrap.log" 2>&1 ||
    { tail -20 "$WORK/debootstrap.log" >&2; unable "debootstrap failed"; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import -q --change 'CMD ["bash"]' - "$DEBIAN" >/dev/null ||
    unable "podman import failed"
  rm -rf "$rootfs"
}

# host_cas DIR: the host's extra CAs into DIR. The package index's TLS certificate may
# come from a local CA: a stand-in image trusts it, as the host does.
host_cas() {
  mkdir -p "$1"
  cp /usr/local/share/ca-certificates/*.crt "$1/" 2>/dev/null || true
}

# base_image: $BASE (python:3.11-slim-bookworm), pulled or a stand-in from Debian's
# python3 (3.11.2) on $DEBIAN.
base_image() {
  pulled "$BASE" && return 0
  say "no registry answered: making $BASE from Debian's packages (~2 min)"
  debian_image
  host_cas "$WORK/base/ca"
  cat >"$WORK/base/Containerfile" <<EOF
FROM $DEBIAN
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
      python3 python3-pip python3-venv python3-dev ca-certificates \\
 && rm -rf /var/lib/apt/lists/* /usr/lib/python3.11/EXTERNALLY-MANAGED \\
 && ln -s /usr/bin/python3 /usr/local/bin/python && ln -s /usr/bin/pip3 /usr/local/bin/pip
COPY ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt
CMD ["python3"]
EOF
  podman build -q --format docker -t "$BASE" "$WORK/base" >"$WORK/base.log" 2>&1 ||
    { tail -30 "$WORK/base.log" >&2; unable "could not make the stand-in $BASE"; }
}

# can_run: this machine can run a container at all (nested containers may be forbidden).
can_run() {
  podman run --rm "$BASE" true 2>"$WORK/run.log" || { cat "$WORK/run.log" >&2; unable "podman cannot run a container here"; }
}

# build_image: kb-ai's image as $IMAGE, without the local extra (no llama.cpp compile).
# From here on a failure is kb-ai's.
#
# podman's layer cache was seen to hand back the COPY layers of an earlier build after
# the sources changed (an image "built in 2 s" that ran the code of an earlier commit),
# so the image is labelled with a hash of what it is built from: the same hash, the image
# is kept as it is (the second smoke of a run); any other, it is built anew, no layer
# reused (about a minute; the pip cache mount keeps the downloads).
source_hash() {
  find Dockerfile pyproject.toml README.md kb_ai wiki compiler retrieval web examples \
    -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 2>/dev/null |
    sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
}

build_image() {
  local t0 want have
  want="$IMAGE_EXTRAS-$(source_hash)"
  have=$(podman image inspect -f '{{index .Labels "kb-ai.source"}}' "$IMAGE" 2>/dev/null || true)
  if [ "$have" = "$want" ]; then
    say "the image of these sources is built already ($want)"
    return
  fi
  say "building the image (extras $IMAGE_EXTRAS: no llama.cpp compile)"
  t0=$(date +%s)
  podman build --no-cache --format docker --build-arg KB_AI_EXTRAS="$IMAGE_EXTRAS" \
    --label "kb-ai.source=$want" -t "$IMAGE" . >"$WORK/build.log" 2>&1 ||
    { tail -40 "$WORK/build.log" >&2; fail "podman build failed"; }
  say "image built in $(($(date +%s) - t0)) s"
}
