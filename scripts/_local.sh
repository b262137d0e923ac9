# Shared by scripts/start and scripts/test: how llama-cpp-python (kb-ai[local]) is built.
# PyPI has only its source (no prebuilt wheel of it, nor of its look-alikes), so pip
# compiles llama.cpp (gcc, g++ and cmake needed) the first time: about 6 minutes on 2
# idle cores, 8-18 beside other work; seconds afterwards from pip's wheel cache.
# GGML_NATIVE=OFF makes a wheel that runs on any x86-64 with AVX2 (as fast here);
# SOURCE_DATE_EPOCH would make ggml fall back to a much slower plain-SSE build.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF}"
unset SOURCE_DATE_EPOCH
if ! "${VENV:-.venv}/bin/python" -c 'import llama_cpp' >/dev/null 2>&1; then
  echo "kb-ai: building llama.cpp for the embedded model (first time only: about 6 min on" \
    "2 idle cores, 8-18 measured with other work beside it); its progress follows" >&2
  export KB_AI_SHOW_BUILD=1  # ensure_venv shows pip's build instead of --quiet
fi
