# Two set-up commands: `make demo` and `make test`. Both create .venv if missing.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# checkov pins its own boto3 (older than the SageMaker SDK needs), so it lives in a venv of its own.
CHECKOV_VENV ?= .venv-checkov
CHECKOV_VERSION := 3.3.30
# The real container code (the oracle of tests/oracle), in its own venv: the TensorFlow
# toolkit pins sagemaker-training<=4.8.3 and numpy<1.24, which conflict with smmpi's.
TOOLKIT_VENV ?= .venv-toolkit
# SDK v3 (sagemaker.train's ModelTrainer) owns the `sagemaker` package as v2 does, so it gets
# a venv of its own; smmpi reaches it with SMMPI_SDK3_PYTHON (tests/sdk/test_model_trainer_v3.py).
SDK3_VENV ?= .venv-sdk3
SDK3_VERSION := 3.27.0
# The TensorFlow images' sagemaker-training (4.8.3), beside the venv's 5.1.4: a --target folder.
TOOLKIT_TF ?= .toolkit-tf
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
export SAGEMAKER_SUPPRESS_V2_WARNING := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo check test lint typecheck pytest test-fallback venvs bench clean sshd slurm

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e '.[aws]'
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed

$(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION):
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install -q 'checkov==$(CHECKOV_VERSION)'
	touch $@

$(TOOLKIT_VENV)/.installed: tests/oracle/requirements.txt tests/oracle/requirements-nodeps.txt
	$(PYTHON) -m venv $(TOOLKIT_VENV)
	$(TOOLKIT_VENV)/bin/pip install -q --upgrade pip
	$(TOOLKIT_VENV)/bin/pip install -q -r tests/oracle/requirements.txt
	$(TOOLKIT_VENV)/bin/pip install -q --no-deps -r tests/oracle/requirements-nodeps.txt
	touch $@

$(SDK3_VENV)/.installed-$(SDK3_VERSION):
	$(PYTHON) -m venv $(SDK3_VENV)
	$(SDK3_VENV)/bin/pip install -q --upgrade pip
	$(SDK3_VENV)/bin/pip install -q 'sagemaker==$(SDK3_VERSION)'
	touch $@

$(TOOLKIT_TF)/.installed: $(TOOLKIT_VENV)/.installed tests/oracle/requirements-tf.txt
	$(TOOLKIT_VENV)/bin/pip install -q --no-deps --upgrade --target $(TOOLKIT_TF) \
		-r tests/oracle/requirements-tf.txt
	touch $@

# Exact mode (--exact) runs a real sshd on port 22 of every emulated instance, as the Deep
# Learning Containers do: Debian's openssh-server, installed as root. Nothing is started or
# configured on this machine; each run configures its own in the instances' namespaces.
sshd:
	@if [ -x /usr/sbin/sshd ]; then echo "sshd: $$(/usr/sbin/sshd -V 2>&1 | head -1)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends openssh-server >/dev/null && \
		echo "sshd: installed $$(/usr/sbin/sshd -V 2>&1 | head -1)"; \
	else echo "sshd: install Debian's openssh-server as root (apt-get install openssh-server)"; \
		exit 1; fi

# `smmpi slurm up` and the SLURM tests (tests/slurm, run by `make test` wherever SLURM is
# installed): Debian's SLURM 22.05, munge and PMIx, installed as root. Nothing is started or
# configured on this machine; each cluster keeps its files in a folder of its own.
SLURM_PACKAGES = slurmctld slurmd slurm-client munge libpmix-dev
slurm:
	@if [ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/munged ] && \
		[ -n "$$(ls /usr/lib/x86_64-linux-gnu/libpmix.so* /usr/lib/*/libpmix.so* 2>/dev/null)" ]; \
		then echo "slurm: $$(/usr/sbin/slurmctld -V)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			$(SLURM_PACKAGES) >/dev/null && echo "slurm: installed $$(/usr/sbin/slurmctld -V)"; \
	else echo "slurm: install Debian's $(SLURM_PACKAGES) as root (apt-get install ...)"; \
		exit 1; fi

demo: $(VENV)/.installed
	$(BIN)/smmpi submit demo --instances 3 --ppn 2 --local

# The fast tier: lint, types, the layers' contracts and every test that starts no mpirun and no
# server (tests/check_tier.py), in about a minute; `make test` runs it first and stops at its
# first failure. mypy runs beside the tier's tests.
check: $(VENV)/.installed-dev
	$(BIN)/ruff check smmpi entry_points tests benchmarks
	$(BIN)/ruff format --check smmpi entry_points tests benchmarks
	$(BIN)/lint-imports
	$(BIN)/mypy & mypy=$$!; \
	PATH="$(CURDIR)/$(BIN):$$PATH" SMMPI_TEST_TIER=check $(BIN)/pytest -q -x -p no:xdist \
		-p no:cacheprovider; tier=$$?; \
	wait $$mypy && [ $$tier = 0 ]

lint: $(VENV)/.installed-dev $(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION)
	$(BIN)/cfn-lint --include-checks I -- infra/smmpi.yaml
	# --skip-download: no call to the vendor's platform; skips need a comment in the template
	$(CHECKOV_VENV)/bin/checkov --directory infra --framework cloudformation --compact --quiet \
		--skip-download

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

# Every environment the suite needs, built side by side (pip mostly waits on downloads and
# disks): `make test` builds them first.
VENVS = $(VENV)/.installed-dev $(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION) \
	$(TOOLKIT_VENV)/.installed $(TOOLKIT_TF)/.installed $(SDK3_VENV)/.installed-$(SDK3_VERSION)
venvs:
	$(MAKE) --no-print-directory -j4 $(VENVS)

# The suite in three passes (tests/conftest.py marks which test goes where):
# 1. side by side: the tests that may run beside others, in 4 workers (most of their time is
#    waiting: the toolkit's 30 s sleeps, servers, timeouts);
# 2. beside pass 1, in a session of its own: the local runner's tests again in the fallback
#    mode (processes), the one machines without namespaces get, but for the tests that pick
#    their mode themselves (marked own_mode: pass 1 ran them as they are); its output is shown
#    after pass 1's (each session tells its own runs' processes and namespaces from the other's);
# 3. one at a time, after both: the tests that time themselves or take the whole machine.
# `make test-fallback` runs the whole suite in processes mode (about 9 minutes here).
FALLBACK_TESTS = tests/runners/local tests/platform tests/supervision \
	tests/instances/test_machine.py tests/faults/test_runtime_faults.py \
	tests/oracle/test_local_ranks.py \
	--deselect tests/faults/test_runtime_faults.py::test_two_hundred_hosts_run
PYTEST_ENV = SMMPI_TEST_TIER=rest PATH="$(CURDIR)/$(BIN):$$PATH" \
	SMMPI_TEST_SDK3_PYTHON="$(abspath $(SDK3_VENV))/bin/python"
FALLBACK_LOG = .pytest_cache/pass2.log

pytest: sshd $(VENVS)
	@mkdir -p .pytest_cache; echo "pass 2 (processes mode) runs beside pass 1; its output is shown after pass 1's"
	( $(PYTEST_ENV) SMMPI_ISOLATION=processes $(BIN)/pytest -q -n 2 -p no:cacheprovider \
		-m "not own_mode" $(FALLBACK_TESTS) > $(FALLBACK_LOG) 2>&1; echo $$? >> $(FALLBACK_LOG) ) & \
	$(PYTEST_ENV) $(BIN)/pytest -q -n 4 --dist loadgroup -m "side_by_side and not machine" \
		--durations=15; one=$$?; wait; \
	echo "=== pass 2: processes mode ==="; cat $(FALLBACK_LOG); \
	two=$$(tail -1 $(FALLBACK_LOG)); rm -f $(FALLBACK_LOG); \
	$(PYTEST_ENV) $(BIN)/pytest -q -m "not side_by_side or machine" --durations=20; three=$$?; \
	echo "passes: side by side exit $$one, processes mode exit $$two, one at a time exit $$three"; \
	[ "$$one$$two$$three" = 000 ]

test-fallback: $(VENV)/.installed-dev $(TOOLKIT_VENV)/.installed $(TOOLKIT_TF)/.installed \
		$(SDK3_VENV)/.installed-$(SDK3_VERSION)
	PATH="$(CURDIR)/$(BIN):$$PATH" SMMPI_ISOLATION=processes \
		SMMPI_TEST_SDK3_PYTHON="$(abspath $(SDK3_VENV))/bin/python" $(BIN)/pytest -q -p no:cacheprovider

# The environments the fast tier needs first (side by side), then the fast tier and lint
# while the other environments build (pip mostly waits on downloads), then the suite.
CHECK_VENVS = $(VENV)/.installed-dev $(SDK3_VENV)/.installed-$(SDK3_VERSION)
test:
	$(MAKE) --no-print-directory -j2 $(CHECK_VENVS)
	$(MAKE) --no-print-directory -j4 -Otarget check lint $(filter-out $(CHECK_VENVS),$(VENVS))
	$(MAKE) --no-print-directory pytest

bench: $(VENV)/.installed-dev
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) $(TOOLKIT_VENV) $(TOOLKIT_TF) $(SDK3_VENV) build dist .pytest_cache .mypy_cache .ruff_cache
