"""The help's prose: what the tool does and the epilog's sections (examples, what the
run does about webhooks, built-in finalizers, signals, scan, exit codes). Kept apart from
the parser's rules; argparse-manpage turns both into the man page."""

from __future__ import annotations

from .scan_flags import SCAN_EPILOG

DESCRIPTION = """\
Free stuck custom resources: remove the finalizers of every custom resource of the
selected CustomResourceDefinitions, in every namespace, in bulk; with --delete, delete
them and then the CRDs (and objects declared in manifests) and wait until they are gone.

Removing a finalizer skips whatever cleanup its controller would have done: external
resources (cloud volumes, DNS records, ...) it guarded may be left behind. The CRD's
own customresourcecleanup finalizer is never touched.

With ns NAME, free everything inside a namespace that keeps it Terminating: every
namespaced type that can be listed and patched (built-in, custom, aggregated) and the
namespace's own metadata.finalizers; with --delete, delete the namespace first and wait
until it is gone. Its spec.finalizers (the namespace controller's) are never touched;
an unavailable APIService that blocks it is named.

With TYPE NAME..., TYPE/NAME... or TYPE -l SELECTOR, free single objects of any type the
server serves (built-in, custom, aggregated), named as kubectl names types: plural,
singular, kind, short name, plural.group, kind.group or plural.version.group. They live
in the kubeconfig's namespace unless -n says otherwise; -A with -l lists every
namespace (with NAMEs it is refused, as kubectl refuses it)."""

EPILOG = """\
examples:
  kubectl unfinalize crd daskclusters.kubernetes.dask.org
  kubectl unfinalize crd --group kubernetes.dask.org --delete
  kubectl unfinalize crd -l app.kubernetes.io/instance=my-operator --dry-run=server
  kubectl unfinalize -f manifests/crds/ --delete --timeout 60s
  kubectl unfinalize crd widgets --finalizer example.com/cleanup -n team-a
  kubectl unfinalize ns test-1234 --delete --timeout 60s
  kubectl unfinalize crd --category managed --delete
  kubectl unfinalize configmap stuck-config -n team-a
  kubectl unfinalize pvc/data-0 pvc/data-1 -n db --finalizer kubernetes.io/pvc-protection
  kubectl unfinalize applications.argoproj.io my-app -n argocd --delete
  kubectl unfinalize secrets -l app=my-operator -A --dry-run=server

admission webhooks left behind: when a finalizer patch is refused with "failed calling
webhook" and the webhook's backend is gone (connection refused, a timeout, its Service
missing or without ready endpoints), the run names the configuration once, sends no
more writes it refuses and ends with exit 1 (a CRD whose objects it refuses is not
deleted); the line reads
  validatingwebhookconfiguration.admissionregistration.k8s.io/NAME still blocking: webhook
  "W" (rule UPDATE on GROUP/RESOURCE, failurePolicy Fail) calls URL, which refuses
  connections; remove it with `kubectl delete validatingwebhookconfiguration NAME`, or
  run again with --remove-dead-webhooks.
That flag deletes such configurations (each removal is reported), then frees as usual.
With -f and --delete, the webhook configurations and APIServices the manifests declare
are deleted first.

conversion webhooks left behind: when a CRD's objects cannot be listed because its
conversion webhook is gone, the run names the webhook (service or URL) and the stored
versions; with --delete it sets the CRD's spec.conversion to strategy None (the old value
is in the CRD's "reconfigured" line), then frees and deletes as usual; without --delete it
changes nothing, ends with exit 1 and says to run `kubectl unfinalize crd NAME --delete`.
The CRD's own customresourcecleanup finalizer is never removed.

built-in finalizers: those of Kubernetes' own controllers (kubernetes.io/pvc-protection,
pv-protection, service.kubernetes.io/load-balancer-cleanup, orphan, foregroundDeletion,
job-tracking, ...) are left for them; one still there at the end is named with its controller and
what it waits for (exit 1). Only --finalizer NAME removes one, and the line then says
what may leak (a Service's ingress, a volume's handle).

signals: the first Ctrl-C or SIGTERM ends the run like its deadline (a summary, exit 130
or 143); a second one stops at once.

final check: without --delete, when objects that were not being deleted were freed,
the tool waits 1s and reads them again to name any controller that put them back.

exit codes: 0 done or nothing to do; 1 something failed or timed out (scan: something
is stuck, or could not be read); 2 usage or input error; 3 scan only: something is pending; 130 interrupted
(Ctrl-C); 143 terminated (SIGTERM)."""
EPILOG = EPILOG.replace("\n\nexit codes:", "\n\n" + SCAN_EPILOG + "\n\nexit codes:", 1)
