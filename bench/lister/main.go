// unfinalize-lister lists every resource type the server serves, metadata-only and
// paginated, N types at once, the way a tuned client-go program would, and counts the
// objects being deleted that finalizers still hold. It prints one JSON line:
// {"types": t, "objects": n, "terminating": k, "seconds": s}.
//
// It is the reference the benchmark (scripts/bench/scan.py) measures `kubectl unfinalize
// scan` against: the reads scan must do, without the grouping and judging.
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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	concurrency := flag.Int("concurrency", 16, "lists in flight")
	chunkSize := flag.Int64("chunk-size", 500, "list page size")
	timeout := flag.Duration("timeout", 20*time.Minute, "give up after this long")
	flag.Parse()

	start := time.Now()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	fail(err)
	cfg.QPS = -1
	cfg.Burst = 1 << 20
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	fail(err)
	client, err := metadata.NewForConfig(cfg)
	fail(err)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	// Preferred versions only; a group version that cannot be discovered is skipped, as scan reports it.
	lists, err := disco.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		fail(err)
	}
	var gvrs []schema.GroupVersionResource
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		fail(err)
		for _, r := range list.APIResources {
			for _, verb := range r.Verbs {
				if verb == "list" {
					gvrs = append(gvrs, gv.WithResource(r.Name))
					break
				}
			}
		}
	}

	var objects, terminating atomic.Int64
	jobs := make(chan schema.GroupVersionResource)
	var wg sync.WaitGroup
	for range *concurrency {
		wg.Go(func() {
			for gvr := range jobs {
				opts := metav1.ListOptions{Limit: *chunkSize}
				for {
					page, err := client.Resource(gvr).Namespace(metav1.NamespaceAll).List(ctx, opts)
					if err != nil {
						fmt.Fprintf(os.Stderr, "unfinalize-lister: list %s: %v\n", gvr, err)
						break
					}
					objects.Add(int64(len(page.Items)))
					for i := range page.Items {
						if page.Items[i].DeletionTimestamp != nil && len(page.Items[i].Finalizers) > 0 {
							terminating.Add(1)
						}
					}
					if page.Continue == "" {
						break
					}
					opts.Continue = page.Continue
				}
			}
		})
	}
	for _, gvr := range gvrs {
		jobs <- gvr
	}
	close(jobs)
	wg.Wait()

	out, _ := json.Marshal(map[string]any{
		"types": len(gvrs), "objects": objects.Load(), "terminating": terminating.Load(),
		"seconds": time.Since(start).Seconds(),
	})
	fmt.Println(string(out))
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "unfinalize-lister:", err)
		os.Exit(1)
	}
}
