// unfinalize-ceiling removes the finalizers of every object of one custom resource, the
// way a tuned client-go program would: a metadata-only paginated list across all
// namespaces, pipelined into N concurrent merge patches {"metadata":{"finalizers":null}},
// with client-side rate limiting off. With --delete-crd it then deletes the CRD and waits
// until it is gone. It prints one JSON line: {"objects": n, "seconds": s}.
//
// --resource and --delete-crd take comma-separated lists (a resource as plural.group is of
// that group, not --group's): the resources are then listed concurrently (up to --lists at once) into the same patches, and the CRDs are
// deleted concurrently and awaited with one list of CRDs per poll. That is the least any
// client can make the API server do for many CRDs, so its time for 200 CRDs against one
// CRD holding as many objects is the server's own floor (scripts/bench/many_crds.py).
//
// It is the reference the benchmark (scripts/benchmark.py) measures kubectl-unfinalize
// against: what the API server allows a client on this machine, not a product.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
)

var patch = []byte(`{"metadata":{"finalizers":null}}`)

type ref struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	group := flag.String("group", "", "API group of the custom resource")
	version := flag.String("version", "v1", "API version")
	resource := flag.String("resource", "", "resource (plural), or several of the group, comma-separated; plural.group for another group")
	concurrency := flag.Int("concurrency", 64, "patches in flight")
	chunkSize := flag.Int64("chunk-size", 500, "list page size")
	lists := flag.Int("lists", 16, "resources listed at once (several --resource)")
	deleteCRD := flag.String("delete-crd", "", "after patching, delete this CRD (or these, comma-separated) and wait until gone")
	timeout := flag.Duration("timeout", 20*time.Minute, "give up after this long")
	flag.Parse()
	if *resource == "" || *concurrency < 1 {
		fmt.Fprintln(os.Stderr, "--resource is required; --concurrency must be >= 1")
		os.Exit(2)
	}

	start := time.Now()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	fail(err)
	cfg.QPS = -1
	cfg.Burst = 1 << 20
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	client, err := metadata.NewForConfig(cfg)
	fail(err)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	refs := make(chan ref, 4**chunkSize)
	var patched atomic.Int64
	var firstErr error
	var errOnce sync.Once
	record := func(err error) { errOnce.Do(func() { firstErr = err }) }
	var wg sync.WaitGroup
	for range *concurrency {
		wg.Go(func() {
			for r := range refs {
				_, err := client.Resource(r.gvr).Namespace(r.namespace).Patch(ctx, r.name, types.MergePatchType, patch, metav1.PatchOptions{})
				switch {
				case err == nil:
					patched.Add(1)
				case apierrors.IsNotFound(err):
				default:
					record(fmt.Errorf("patch %s/%s: %w", r.namespace, r.name, err))
				}
			}
		})
	}

	var listers sync.WaitGroup
	seats := make(chan struct{}, *lists)
	for _, plural := range strings.Split(*resource, ",") {
		gvr := schema.GroupVersionResource{Group: *group, Version: *version, Resource: plural}
		if name, in, ok := strings.Cut(plural, "."); ok { // plural.group: resources of several groups
			gvr.Resource, gvr.Group = name, in
		}
		seats <- struct{}{}
		listers.Go(func() {
			defer func() { <-seats }()
			if err := listInto(ctx, client, gvr, *chunkSize, refs); err != nil {
				record(err)
			}
		})
	}
	listers.Wait()
	close(refs)
	wg.Wait()
	fail(firstErr)

	if *deleteCRD != "" {
		deleteAndWait(ctx, client, strings.Split(*deleteCRD, ","), *lists)
	}

	out, _ := json.Marshal(map[string]any{"objects": patched.Load(), "seconds": time.Since(start).Seconds()})
	fmt.Println(string(out))
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "unfinalize-ceiling:", err)
		os.Exit(1)
	}
}

// listInto sends every object of gvr that has finalizers, page by page.
func listInto(ctx context.Context, client metadata.Interface, gvr schema.GroupVersionResource, chunk int64, refs chan<- ref) error {
	opts := metav1.ListOptions{Limit: chunk}
	for {
		page, err := client.Resource(gvr).Namespace(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list %s: %w", gvr, err)
		}
		for i := range page.Items {
			if len(page.Items[i].Finalizers) > 0 {
				refs <- ref{gvr, page.Items[i].Namespace, page.Items[i].Name}
			}
		}
		if page.Continue == "" {
			return nil
		}
		opts.Continue = page.Continue
	}
}

// deleteAndWait deletes the CRDs (up to `at` at once) and polls until none is left: one
// GET per poll for a single CRD, one list of all CRDs per poll for several.
func deleteAndWait(ctx context.Context, client metadata.Interface, names []string, at int) {
	crds := client.Resource(crdResource)
	var wg sync.WaitGroup
	seats := make(chan struct{}, at)
	for _, name := range names {
		seats <- struct{}{}
		wg.Go(func() {
			defer func() { <-seats }()
			if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				fail(fmt.Errorf("delete crd %s: %w", name, err))
			}
		})
	}
	wg.Wait()
	for {
		var left bool
		var err error
		if len(names) == 1 {
			_, err = crds.Get(ctx, names[0], metav1.GetOptions{})
			left = err == nil
			if apierrors.IsNotFound(err) {
				err = nil
			}
		} else {
			var all *metav1.PartialObjectMetadataList
			all, err = crds.List(ctx, metav1.ListOptions{})
			if err == nil {
				left = slices.ContainsFunc(all.Items, func(o metav1.PartialObjectMetadata) bool { return slices.Contains(names, o.Name) })
			}
		}
		if err == nil && !left {
			return
		}
		if err != nil && ctx.Err() != nil {
			fail(fmt.Errorf("waiting for crds to be gone: %w", err))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
