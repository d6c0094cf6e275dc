# gpu-runbook: `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   := .venv
BIN    := $(CURDIR)/$(VENV)/bin
# Two installs: the demo needs only the package (ansible-core, ansible-runner, jinja2); the
# test tools (pytest, ansible-lint, molecule, hypothesis, ...) come with test/unit/lint and co.
BASE_STAMP := $(VENV)/.installed-base
STAMP      := $(VENV)/.installed-test
# ansible-lint and molecule call ansible-config & co: the venv's bin/ must come first.
export PATH := $(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

# Packages the emulated cluster needs (real sshd, real Slurm); installed only as root on Debian/Ubuntu.
SYSTEM_PACKAGES := openssh-server slurmctld slurmd slurm-client munge iproute2 util-linux procps chromium
SYSTEM_BINARIES := /usr/sbin/sshd /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch /usr/sbin/munged /usr/bin/unshare /usr/bin/chromium

.PHONY: demo test test-full unit lint cluster-test system-deps venv clean bench score fuzz molecule prefilter-check bench-joblog bench-scale

venv: $(BASE_STAMP)

$(BASE_STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "gpu-runbook needs Python >= 3.11 (found %s); run make PYTHON=python3.11" % sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e .
	@touch $@

$(STAMP): $(BASE_STAMP) pyproject.toml
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test]'
	@touch $@

# The README's incident: job 4242 hung at epoch 35 on gpu-rack3. Its log and the nodes' captures are
# replayed (inventory-examples/demo-captures/scenario.yml tells the story); the reports land in DEMO_REPORT.
DEMO_REPORT ?= $(CURDIR)/demo-report
# ansible-core 2.19 imports DSA at start and cryptography >= 51 warns about it on every command: not ours to show
demo: $(BASE_STAMP)
	PYTHONWARNINGS=ignore::UserWarning:ansible._internal._ssh._ssh_agent \
	$(BIN)/ansible-playbook playbooks/diagnose.yml -i inventory-examples/demo -l gpu-rack3 \
	  -e job_log_dir=$(CURDIR)/inventory-examples/demo-captures/job-4242 -e report_dir=$(DEMO_REPORT)

system-deps:
	@missing=""; for b in $(SYSTEM_BINARIES); do [ -x $$b ] || missing="$$missing $$b"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing system packages for the emulated cluster (missing:$$missing)"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(SYSTEM_PACKAGES) >/dev/null; \
	else echo "note: cluster tests need$$missing (root on Debian/Ubuntu installs them); they will be skipped"; fi

lint: $(STAMP)
	$(BIN)/yamllint -s .
	$(BIN)/ansible-lint --profile production --offline playbooks roles

unit: $(STAMP)
	$(BIN)/python -m pytest -m "not cluster"

# Three pytest processes side by side: the emulated-cluster tests (one cluster per machine: they run
# in order in their own process), the playbook tests (tests/integration: ansible-playbook runs, much
# of it waiting on processes and timeouts) and everything else (unit, fuzz); the first two keep
# their output until the end. `make test` is the fast tier (CI's, .ci/run): every test but those
# marked `slow` (Molecule, the rest of the fault catalogue, second scenarios of a behaviour the fast
# tier tests); `make test-full` runs them all (BENCHMARKS.md has both tiers' times).
TIER ?= not slow
TIER_ARGS = $(if $(TIER),-m "$(TIER)")
test: $(STAMP) system-deps lint
	@clog=$$(mktemp); ilog=$$(mktemp); \
	$(BIN)/python -m pytest tests/cluster $(TIER_ARGS) --durations=20 > $$clog 2>&1 & cluster=$$!; \
	$(BIN)/python -m pytest tests/integration $(TIER_ARGS) --durations=20 > $$ilog 2>&1 & integration=$$!; \
	$(BIN)/python -m pytest --ignore=tests/cluster --ignore=tests/integration $(TIER_ARGS) --durations=20; rest=$$?; \
	wait $$integration; integration_rc=$$?; \
	echo "=== the playbook tests (tests/integration), run beside the others ==="; cat $$ilog; \
	wait $$cluster; cluster_rc=$$?; \
	echo "=== the emulated-cluster tests (tests/cluster), run beside the others ==="; cat $$clog; \
	rm -f $$clog $$ilog; \
	echo "tests/cluster: exit $$cluster_rc; tests/integration: exit $$integration_rc; the others: exit $$rest"; \
	[ $$rest = 0 ] && [ $$integration_rc = 0 ] && [ $$cluster_rc = 0 ]

test-full:
	$(MAKE) test TIER=

# Each role's Molecule scenario on the emulated cluster (root, as the cluster tests; one testbed at
# a time): `make molecule ROLE=rung_drain` runs one. The shared part is .config/molecule/config.yml;
# `make test` runs them all too (tests/cluster/test_molecule.py).
ROLE ?=
molecule: $(STAMP) system-deps
	@for r in $(if $(ROLE),roles/$(ROLE),$(sort $(patsubst %/molecule/,%,$(wildcard roles/*/molecule/)))); do \
	  r=$${r%/}; [ -d "$$r/molecule" ] || { echo "$$r has no Molecule scenario"; exit 2; }; \
	  echo "=== $$r"; (cd "$$r" && $(BIN)/molecule test) || exit 1; done

# Every parser fed FUZZ_EXAMPLES generated hostile inputs (random, not the fixed CI seed);
# `make test` runs the same tests with a small derandomized profile.
FUZZ_EXAMPLES ?= 10000
fuzz: $(STAMP)
	GPURB_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest tests/fuzz -m fuzz -q -p no:cacheprovider

bench: $(STAMP)
	$(BIN)/python tests/benchmarks/bench_kernlog.py
bench-scale: $(BASE_STAMP) ; $(BIN)/python tests/benchmarks/bench_aggregate.py && $(BIN)/python tests/benchmarks/bench_plan.py
bench-joblog: $(BASE_STAMP) ; $(BIN)/python tests/benchmarks/bench_joblog.py
# the job-log prefilter (joblog/quiet.py) against a full reading, on every capture behind 2,100 quiet lines
prefilter-check: $(BASE_STAMP) ; $(BIN)/python tests/tools/prefilter_exactness.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache

# How the engine does on real captures with truth (per field); SCORE_DIRS may add e.g. ../shared/reference-captures.
SCORE_DIRS ?= tests/fixtures/real
score: $(STAMP)
	$(BIN)/python tests/benchmarks/score_captures.py $(SCORE_DIRS)
