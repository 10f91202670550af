# Developer tasks. PYTHON defaults to the project virtualenv.
PYTHON ?= .venv/bin/python
CLUSTER_DIR ?= .cluster
CLUSTER := $(PYTHON) tests/controlplane/cluster.py

.PHONY: cluster cluster-down cluster-status

## cluster: start a local control plane in the background ($(CLUSTER_DIR)/kubeconfig)
cluster:
	$(CLUSTER) up --dir $(CLUSTER_DIR)

## cluster-down: stop it and remove $(CLUSTER_DIR)
cluster-down:
	$(CLUSTER) down --dir $(CLUSTER_DIR)

## cluster-status: show whether it runs and how to use it
cluster-status:
	$(CLUSTER) status --dir $(CLUSTER_DIR)
