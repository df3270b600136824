# syntax=docker/dockerfile:1
# The deidstream worker image. One Dockerfile, two images (README, "Deployment"):
#   CPU : docker build --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu -t deidstream:0.1.0 .
#   CUDA: docker build --build-arg BASE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04 -t deidstream:0.1.0-cuda .
# BASE must be a Debian/Ubuntu image; Python 3.11+ comes from it (python images) or from apt (CUDA images).
# No secrets at build or run time: DEID_SECRET, Kafka and LLM credentials come from Kubernetes Secrets.
ARG BASE=python:3.11.11-slim-bookworm
# checkov:skip=CKV_DOCKER_7: FROM ${BASE} reads a build arg; its default is the pinned python:3.11.11-slim-bookworm and the documented CUDA base is pinned too (tests/unit/deploy checks both tags)

# ---- build: a virtual environment with torch first (as the Makefile does), then deidstream ----------------
FROM ${BASE} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# python images have Python; CUDA images get the distribution's python3 + venv (versions follow BASE's release)
# hadolint ignore=DL3008
RUN if ! python3 -c "import venv, ensurepip" 2>/dev/null; then \
      apt-get update && apt-get install -y --no-install-recommends python3 python3-venv \
      && rm -rf /var/lib/apt/lists/*; \
    fi
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv /opt/deidstream
# empty: PyPI (the CUDA build of torch); the CPU image passes PyTorch's CPU index (no GBs of CUDA libraries)
ARG TORCH_INDEX_URL=""
RUN /opt/deidstream/bin/pip install torch==2.13.0 ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
WORKDIR /src
COPY pyproject.toml README.md ./
COPY streams ./streams
COPY processors ./processors
COPY dictionaries ./dictionaries
COPY schemas ./schemas
# not editable: the package (with the shipped NER and decision models) lives in the venv
RUN /opt/deidstream/bin/pip install . \
    && /opt/deidstream/bin/python -c "import processors.ner, processors.decide, pathlib; \
assert (pathlib.Path(processors.ner.__file__).parent / 'models/deid-minilm/model.safetensors').is_file(); \
assert (pathlib.Path(processors.decide.__file__).parent / 'models/decider/model.txt.xz').is_file()"

# ---- runtime -------------------------------------------------------------------------------------------------
FROM ${BASE} AS runtime
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# libgomp1: LightGBM's OpenMP runtime (the decide step's model; torch brings its own); python3 on a CUDA base
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libgomp1 \
    && if ! python3 -c "import venv" 2>/dev/null; then apt-get install -y --no-install-recommends python3; fi \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 deid \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin deid \
    && mkdir -p /var/cache/deidstream && chown 10001:10001 /var/cache/deidstream
COPY --from=build /opt/deidstream /opt/deidstream
ENV PATH=/opt/deidstream/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    DEID_CACHE_DIR=/var/cache/deidstream \
    DEID_HEALTH__HOST=0.0.0.0 \
    DEID_HEALTH__PORT=8080
WORKDIR /tmp
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=300s --retries=3 \
  CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/livez', timeout=4)"]
ENTRYPOINT ["deidstream"]
CMD ["worker"]
