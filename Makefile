# Developer tasks. PYTHON defaults to the project virtualenv.
PYTHON ?= .venv/bin/python
CLUSTER_DIR ?= .cluster
CLUSTER := PYTHONPATH=tests $(PYTHON) -m controlplane
# The full suite runs against the release pinned in tests/controlplane/build.sh; the
# integration core (pytest -m core) against the oldest supported minor's newest patch on
# the Go module proxy too (v1.29.15; 1.32's is v1.32.9: the proxy lacks some staging
# modules of v1.32.10-13). K8S_VERSION picks another for make test-version.
OLDEST_K8S := v1.29.15
K8S_VERSION ?= $(OLDEST_K8S)

.PHONY: cluster cluster-down cluster-status test test-fast setup controlplane controlplane-version lint format test-unit \
	test-integration test-version demo bench

## setup: create .venv and install the locked development requirements (idempotent)
setup: .venv/.installed
.venv/.installed: requirements-dev.txt packaging/requirements-build.txt
	test -x .venv/bin/python || python3 -m venv .venv
	.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

## controlplane: build (or reuse) etcd, kube-apiserver, kube-controller-manager, kubectl, krew
controlplane:
	tests/controlplane/build.sh >/dev/null

## controlplane-version: build (or reuse) etcd, kube-apiserver, kube-controller-manager, kubectl of K8S_VERSION
controlplane-version:
	UNFINALIZE_K8S_VERSION=$(K8S_VERSION) tests/controlplane/build.sh >/dev/null

## lint: ruff check and format check, mypy (strict on src/), the import contracts
lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy
	PYTHONPATH=src .venv/bin/lint-imports --no-cache

## format: apply ruff's formatting and safe fixes
format: setup
	.venv/bin/ruff check --fix .
	.venv/bin/ruff format .

## test-unit: fast tests, no cluster
test-unit: setup
	$(PYTHON) -m pytest tests/unit

## test-integration: against a throwaway local control plane (or UNFINALIZE_TEST_KUBECONFIG)
test-integration: setup controlplane
	$(PYTHON) -m pytest tests/integration

## test-version: the integration core (pytest -m core) against K8S_VERSION, by default the oldest supported ($(OLDEST_K8S))
test-version: setup controlplane-version
	UNFINALIZE_K8S_VERSION=$(K8S_VERSION) $(PYTHON) -m pytest -m core tests/integration

## test: everything CI runs: lint, unit and integration tests, the built binary through kubectl and krew; the core on $(OLDEST_K8S)
test: setup controlplane lint lint-workflows binary
	CI=$${CI:-1} $(PYTHON) -m pytest -n 2 --dist worksteal --durations=20 tests
	CI=$${CI:-1} UNFINALIZE_BINARY=dist/kubectl-unfinalize $(PYTHON) -m pytest tests/integration/test_operator.py -k stopped_operator
	CI=$${CI:-1} $(MAKE) --no-print-directory test-version K8S_VERSION=$(OLDEST_K8S)

## test-fast: what to run while working: lint, the unit tests and the integration core on one control plane
test-fast: setup controlplane lint
	$(PYTHON) -m pytest -m "core or not integration" tests/unit tests/controlplane tests/integration

## demo: reproduce the teardown hang on a local control plane, then fix it
demo: setup
	PYTHON=$(PYTHON) scripts/demo.sh

## bench: dist/kubectl-unfinalize (make binary) vs kubectl at small N and a client-go ceiling at N=2000..10000, also far (BENCH_ARGS=--quick)
bench: setup controlplane
	$(PYTHON) scripts/benchmark.py $(BENCH_ARGS)

## cluster: start a local control plane in the background ($(CLUSTER_DIR)/kubeconfig)
cluster: setup controlplane
	$(CLUSTER) up --dir $(CLUSTER_DIR)

## cluster-down: stop it and remove $(CLUSTER_DIR)
cluster-down: setup
	$(CLUSTER) down --dir $(CLUSTER_DIR)

## cluster-status: show whether it runs and how to use it
cluster-status: setup
	$(CLUSTER) status --dir $(CLUSTER_DIR)

# ---------------------------------------------------------------- release packaging
TAG ?= v$(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' src/kubectl_unfinalize/_version.py)

.PHONY: binary man krew-manifest lint-workflows test-packaging

## binary: reproducible one-file build: dist/kubectl-unfinalize and dist/kubectl-unfinalize_<os>_<arch>.tar.gz(.sha256)
binary: setup
	PYTHON=$(PYTHON) packaging/build-binary.sh

## man: the man page from the argparse parser: build/man/kubectl-unfinalize.1
man: setup
	$(PYTHON) packaging/build-man.py

## krew-manifest: krew-manifest.yaml rendered for the local archive: dist/unfinalize.yaml (TAG=$(TAG))
krew-manifest: binary
	$(PYTHON) packaging/render-krew-manifest.py $(TAG) dist/kubectl-unfinalize_*.tar.gz

## lint-workflows: actionlint on .github/workflows
lint-workflows: controlplane
	"$$(tests/controlplane/build.sh)/actionlint"

## test-packaging: man page, completion, krew install and binary tests (make binary first)
test-packaging: setup controlplane
	$(PYTHON) -m pytest tests/packaging
