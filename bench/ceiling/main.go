// unfinalize-ceiling removes the finalizers of every object of one custom resource, the
// way a tuned client-go program would: a metadata-only paginated list across all
// namespaces, pipelined into N concurrent merge patches {"metadata":{"finalizers":null}},
// with client-side rate limiting off. With --delete-crd it then deletes the CRD and waits
// until it is gone. It prints one JSON line: {"objects": n, "seconds": s}.
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

type ref struct{ namespace, name string }

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	group := flag.String("group", "", "API group of the custom resource")
	version := flag.String("version", "v1", "API version")
	resource := flag.String("resource", "", "resource (plural)")
	concurrency := flag.Int("concurrency", 64, "patches in flight")
	chunkSize := flag.Int64("chunk-size", 500, "list page size")
	deleteCRD := flag.String("delete-crd", "", "after patching, delete this CRD and wait until it is gone")
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

	gvr := schema.GroupVersionResource{Group: *group, Version: *version, Resource: *resource}
	refs := make(chan ref, 4**chunkSize)
	var patched atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for range *concurrency {
		wg.Go(func() {
			for r := range refs {
				_, err := client.Resource(gvr).Namespace(r.namespace).Patch(ctx, r.name, types.MergePatchType, patch, metav1.PatchOptions{})
				switch {
				case err == nil:
					patched.Add(1)
				case apierrors.IsNotFound(err):
				default:
					errOnce.Do(func() { firstErr = fmt.Errorf("patch %s/%s: %w", r.namespace, r.name, err) })
				}
			}
		})
	}

	opts := metav1.ListOptions{Limit: *chunkSize}
	for {
		page, err := client.Resource(gvr).Namespace(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			close(refs)
			wg.Wait()
			fail(fmt.Errorf("list %s: %w", gvr, err))
		}
		for i := range page.Items {
			if len(page.Items[i].Finalizers) > 0 {
				refs <- ref{page.Items[i].Namespace, page.Items[i].Name}
			}
		}
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	close(refs)
	wg.Wait()
	fail(firstErr)

	if *deleteCRD != "" {
		crds := client.Resource(schema.GroupVersionResource{
			Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions",
		})
		if err := crds.Delete(ctx, *deleteCRD, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			fail(fmt.Errorf("delete crd %s: %w", *deleteCRD, err))
		}
		for {
			_, err := crds.Get(ctx, *deleteCRD, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if err != nil && ctx.Err() != nil {
				fail(fmt.Errorf("waiting for crd %s to be gone: %w", *deleteCRD, err))
			}
			time.Sleep(50 * time.Millisecond)
		}
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
